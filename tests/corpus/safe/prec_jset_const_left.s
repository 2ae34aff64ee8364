# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# The constant on the left of JSET: `r3 = 8; if r3 & r2` not taken clears
# bit 3 of r2 as `if r2 & 8` would: r2 in [0, 15] is then at most 7.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r2, [%r1+0]
and %r2, 15
mov %r3, 8
jset %r3, %r2, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
