# EXPECT: stack access out of bounds
# adversarial case (pruning, joins): loop join idx
mov %r0, 0
stdw [%r10-8], 0
mov %r3, 0
mov %r9, 0
l:
add %r3, 1
add %r9, 1
jlt %r9, 20, l
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
