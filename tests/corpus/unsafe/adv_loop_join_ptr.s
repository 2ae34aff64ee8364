# EXPECT: stack access out of bounds
# adversarial case (pruning, joins): loop join ptr
mov %r0, 0
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
mov %r9, 0
l:
add %r4, 1
add %r9, 1
jlt %r9, 20, l
ldxb %r0, [%r4+0]
mov %r0, 0
exit
