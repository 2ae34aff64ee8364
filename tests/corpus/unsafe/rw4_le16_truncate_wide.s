# EXPECT: stack access out of bounds
# near miss of safe/rw4_le16_truncate: x & 0x7000f keeps [0, 15] after le16
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0x7000f
le16 %r2
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
