# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: id after neg
mov %r0, 0
ldxdw %r2, [%r1+0]
mov %r3, %r2
neg %r3
jgt %r3, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
