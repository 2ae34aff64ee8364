# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: prune ids
mov %r0, 0
ldxdw %r2, [%r1+0]
ldxdw %r3, [%r1+8]
ldxw %r5, [%r1+28]
jeq %r5, 0, l
mov %r3, %r2
l:
mov %r5, 0
jgt %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
