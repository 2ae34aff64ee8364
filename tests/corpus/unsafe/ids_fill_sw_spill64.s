# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# An 8-byte spill of a value in [0, 2^32 - 1], its low 4 bytes filled back
# with ldxsw: sign-extended, so not the spilled value when bit 31 is set.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
mov32 %r2, %r2
stxdw [%r10-16], %r2
ldxsw %r3, [%r10-16]
jsgt %r3, -1, out
jslt %r3, -8, out
mov %r4, %r10
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
