# EXPECT: accept
# (s32)(x >> 20), computed as (x << 12) s>> 32, clamped to [0, 7] bounds
# (u32)(x >> 20) used as a stack index: the two extensions share the low 32 bits
stdw [%r10-8], 0
ldxdw %r3, [%r1+0]
mov %r2, %r3
rsh %r2, 20
lsh %r3, 12
arsh %r3, 32
jslt %r3, 0, out
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
