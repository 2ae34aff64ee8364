# EXPECT: pointer arithmetic with unbounded scalar
# a 32-bit AND keeps the low half only: the 64-bit value was never bounded
ldxdw %r2, [%r1+0]
and32 %r2, -1
stdw [%r10-8], 0
mov %r3, %r10
add %r3, %r2
mov %r0, 0
exit
