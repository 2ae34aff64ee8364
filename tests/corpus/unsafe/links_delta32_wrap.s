# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# w7 += 5 on a copy of r6 in [0, 2^32 - 1] wraps for the top values: r7 is
# not r6 + 5 then.  A check on r7 (at most 3, as 0xfffffffb..0xfffffffe
# give) must not put r6 in [-5, -2].
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
mov32 %r6, %r6
mov %r7, %r6
add32 %r7, 5
jgt %r7, 3, out
mov %r4, %r10
add %r4, -1
add %r4, %r6
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
