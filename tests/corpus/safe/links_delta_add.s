# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# r7 = r6 + 5 (mov, then add of a constant) keeps r7 linked to r6 with a
# delta of 5: the check on r6 (at most 7) bounds r7 to [5, 12] (the
# kernel's BPF_ADD_CONST links).  Near miss: unsafe/links_delta_near.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
mov %r7, %r6
add %r7, 5
jgt %r6, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r7
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
