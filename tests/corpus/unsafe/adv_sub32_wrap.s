# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: sub32 wrap
mov %r0, 0
ldxw %r2, [%r1+28]
jgt %r2, 8, exit
sub32 %r2, 16
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
