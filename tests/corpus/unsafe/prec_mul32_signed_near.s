# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# w2 in [-4, -1] times w2 in [-4, 3]: the product crosses zero, so its zero
# extension is two pieces (up to 0xfffffff4), which no stack offset fits.
# Near miss of safe/prec_mul32_signed.
stdw [%r10-8], 0
stdw [%r10-16], 0
stdw [%r10-24], 0
stdw [%r10-32], 0
ldxdw %r2, [%r1+0]
and %r2, 3
sub32 %r2, 4
ldxdw %r3, [%r1+8]
and %r3, 7
sub32 %r3, 4
mul32 %r2, %r3
mov %r4, %r10
add %r4, -17
add %r4, %r2
ldxb %r0, [%r4+0]
exit
