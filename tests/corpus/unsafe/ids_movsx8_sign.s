# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# r3 = (s8)r2 with r2 in [0, 255] is another value when bit 7 is set: a
# check on r3 (in [-8, -1]) says nothing of r2.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0xff
movsx864 %r3, %r2
jsgt %r3, -1, out
jslt %r3, -8, out
mov %r4, %r10
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
