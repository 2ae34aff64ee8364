# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# w3 = (s16)w2 with r2 in [0, 0x7fff] is r2 itself: linked.  Near miss:
# unsafe/ids_movsx16_32_sign.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0x7fff
movsx1632 %r3, %r2
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
