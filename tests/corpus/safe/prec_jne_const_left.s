# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# The constant on the left of ==/!=: with r2 in [0, 8], `r3 = 8; if r3 == r2`
# not taken leaves r2 in [0, 7] as `if r2 == 8` would.  Near miss:
# unsafe/prec_jne_const_left_near.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r2, [%r1+0]
jgt %r2, 8, out
mov %r3, 8
jeq %r3, %r2, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
