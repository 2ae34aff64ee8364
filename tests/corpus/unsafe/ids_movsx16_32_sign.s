# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# w3 = (s16)w2 with r2 in [0, 0xffff] zero-extends a sign-extended half:
# another value when bit 15 is set (0xfff8 gives 0xfffffff8), so the
# check on r3 (in [0xfffffff8, 0xffffffff]) says nothing of r2.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0xffff
movsx1632 %r3, %r2
lddw %r5, 0xfffffff8
jlt %r3, %r5, out
sub %r2, %r5
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
