# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# r7 = r6 + 5, then r6 is written again: the check on the new r6 says
# nothing of r7.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
mov %r7, %r6
add %r7, 5
ldxdw %r6, [%r1+8]
jgt %r6, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r7
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
