# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# JSET taken with a one-bit constant sets that bit: r2 in [0, 15] with bit
# 3 set is in [8, 15], so fp-520 + r2 stays in the frame (fp-512 on).
# Near miss: unsafe/prec_jset_bits_taken.
stdw [%r10-512], 0
ldxdw %r2, [%r1+0]
and %r2, 15
jset %r2, 8, use
ja out
use:
mov %r4, %r10
add %r4, -520
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
