# EXPECT: accept
# le16 truncates (on a little-endian machine) and keeps the known bits:
# x & 0x70007 becomes [0, 7]
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0x70007
le16 %r2
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
