# EXPECT: read of uninitialised stack
# near miss of safe/rw4_sext_cross_sign_pos: below 0xff..ff80 unsigned keeps -128 too
stdw [%r10-8], 0
stdw [%r10-16], 0
stdw [%r10-24], 0
stdw [%r10-32], 0
stdw [%r10-40], 0
stdw [%r10-48], 0
stdw [%r10-56], 0
stdw [%r10-64], 0
stdw [%r10-72], 0
stdw [%r10-80], 0
stdw [%r10-88], 0
stdw [%r10-96], 0
stdw [%r10-104], 0
stdw [%r10-112], 0
stdw [%r10-120], 0
stdw [%r10-128], 0
call 5
movsx864 %r0, %r0
lddw %r1, 0xffffffffffffff80
jgt %r0, %r1, out
mov %r4, %r10
add %r4, -128
add %r4, %r0
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
