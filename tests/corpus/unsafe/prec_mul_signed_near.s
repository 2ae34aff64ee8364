# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# r2 in [-4, 3] times 6 reaches 18: fp-16 + 18 is above the frame.  Near
# miss of safe/prec_mul_signed.
stdw [%r10-8], 0
stdw [%r10-16], 0
stdw [%r10-24], 0
stdw [%r10-32], 0
ldxdw %r2, [%r1+0]
and %r2, 7
sub %r2, 4
mul %r2, 6
mov %r4, %r10
add %r4, -16
add %r4, %r2
ldxb %r0, [%r4+0]
exit
