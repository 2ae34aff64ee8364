# EXPECT: pointer arithmetic with unbounded scalar
# near miss of safe/rw4_link_sext_zext: only the upper bound of the signed
# copy is checked; a negative int is a huge zero-extended index
stdw [%r10-8], 0
ldxdw %r3, [%r1+0]
mov %r2, %r3
rsh %r2, 20
lsh %r3, 12
arsh %r3, 32
jsgt %r3, 7, out
lsh %r2, 32
rsh %r2, 32
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
