# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# The same in 32 bits, the constant on the left: `w3 = 8; if w3 & w2` taken
# sets bit 3 of w2.
stdw [%r10-512], 0
ldxdw %r2, [%r1+0]
and %r2, 15
mov32 %r3, 8
jset32 %r3, %r2, use
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
