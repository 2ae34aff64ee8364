# EXPECT: pointer arithmetic with unbounded scalar
# n_bytes checked as a signed 64-bit value <= 84, then truncated to 32 bits:
# a negative value becomes a huge offset, so the check no longer bounds it
ldxdw %r2, [%r1+0]
jsgt %r2, 84, +4
mov32 %r2, %r2
add %r1, %r2
ldxw %r0, [%r1+0]
mov %r0, 0
exit
