# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# JSET taken with two bits (12) says one of them is set, not which: r2 may
# be 4, and fp-520 + 4 is below the frame.  Near miss of
# safe/prec_jset_bit_taken.
stdw [%r10-512], 0
ldxdw %r2, [%r1+0]
and %r2, 15
jset %r2, 12, use
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
