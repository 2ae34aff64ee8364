# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# w7 += 5 on a copy of r6 in [0, 0xffff]: no value wraps at 32 bits, so the
# 32-bit sum is the 64-bit one and r7 stays linked to r6 with delta 5.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
and %r6, 0xffff
mov %r7, %r6
add32 %r7, 5
jgt %r6, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r7
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
