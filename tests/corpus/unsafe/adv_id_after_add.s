# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: id after add
mov %r0, 0
ldxdw %r2, [%r1+0]
mov %r3, %r2
add %r3, 0x1000
jgt %r2, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
