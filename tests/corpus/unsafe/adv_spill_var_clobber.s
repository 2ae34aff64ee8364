# EXPECT: pointer arithmetic with unbounded scalar
# adversarial case: spill var clobber
mov %r0, 0
ldxb %r2, [%r1+28]
and %r2, 7
ldxb %r6, [%r1+32]
and %r6, 1
stdw [%r10-16], 0
stxdw [%r10-8], %r2
mov %r5, %r10
add %r5, -8
add %r5, %r6
stb [%r5+0], 0x40
ldxdw %r3, [%r10-8]
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
mov %r0, 0
exit
