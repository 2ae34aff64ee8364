# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case (pruning, joins): loop join via r7
mov %r0, 0
stdw [%r10-8], 0
stdw [%r10-16], 0
mov %r7, %r10
mov %r9, 0
l:
ldxdw %r3, [%r7-16]
add %r3, 1
stxw [%r7-16], %r3
add %r9, 1
jlt %r9, 20, l
ldxw %r3, [%r10-16]
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
