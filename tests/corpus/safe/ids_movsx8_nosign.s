# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# r3 = (s8)r2 with r2 in [0, 127] is r2 itself: linked, so the check on r3
# bounds r2 (the kernel keeps the id when no sign bit can be set).  Near
# miss: unsafe/ids_movsx8_sign.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0x7f
movsx864 %r3, %r2
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
