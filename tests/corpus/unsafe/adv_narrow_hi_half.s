# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: narrow hi half
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 7
stdw [%r10-16], 0
stdw [%r10-8], -1
stxw [%r10-4], %r2
ldxw %r3, [%r10-8]
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
