# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: spill hibyte clobber
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 7
stdw [%r10-16], 0
stxdw [%r10-8], %r2
stb [%r10-1], 0x40
ldxdw %r3, [%r10-8]
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
