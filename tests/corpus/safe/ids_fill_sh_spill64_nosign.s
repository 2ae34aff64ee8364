# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# An 8-byte spill of a value in [0, 0x7fff], its low 2 bytes filled back
# with ldxsh: bit 15 is clear, so the fill is the value and stays linked.
# Near miss: unsafe/ids_fill_sb_spill64.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0x7fff
stxdw [%r10-16], %r2
ldxsh %r3, [%r10-16]
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
