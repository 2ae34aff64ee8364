# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# The other way round: r7 = r6 - 3, a check on r7 (at most 4) bounds r6 to
# r7 + 3 (signed: r7 in [0, 4] gives r6 in [3, 7]).
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
mov %r7, %r6
sub %r7, 3
jgt %r7, 4, out
mov %r4, %r10
add %r4, -8
add %r4, %r6
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
