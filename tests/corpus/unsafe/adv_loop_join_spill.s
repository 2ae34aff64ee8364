# EXPECT: stack access out of bounds
# adversarial case (pruning, joins): loop join spill
mov %r0, 0
stdw [%r10-8], 0
stdw [%r10-16], 0
mov %r9, 0
l:
ldxdw %r3, [%r10-16]
add %r3, 1
stxdw [%r10-16], %r3
add %r9, 1
jlt %r9, 20, l
ldxdw %r3, [%r10-16]
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
