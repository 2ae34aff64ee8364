# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# A 4-byte spill of a value in [0, 2^32 - 1] filled back with ldxsw is
# sign-extended: another value whenever bit 31 is set, so it is not linked
# to the spilled register.  The check on the fill (in [-8, -1]) says
# nothing of r2, which may be 0xfffffff8 (it was once applied to it).
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
mov32 %r2, %r2
stxw [%r10-16], %r2
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
