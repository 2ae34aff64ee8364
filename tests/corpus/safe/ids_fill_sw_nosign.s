# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# A 4-byte spill of a value in [0, 2^31 - 1] filled back with ldxsw: bit 31
# is clear, so the fill is the spilled value and stays linked to it; the
# check on the fill bounds r2.  Near miss: unsafe/ids_fill_sw_sign.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0x7fffffff
stxw [%r10-16], %r2
ldxsw %r3, [%r10-16]
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
