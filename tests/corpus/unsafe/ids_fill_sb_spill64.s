# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# An 8-byte spill of a value in [0, 255], its low byte filled back with
# ldxsb: sign-extended, so not the spilled value when bit 7 is set.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0xff
stxdw [%r10-16], %r2
ldxsb %r3, [%r10-16]
jsgt %r3, -1, out
jslt %r3, -8, out
mov %r4, %r10
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
