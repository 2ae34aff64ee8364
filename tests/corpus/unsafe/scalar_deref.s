# EXPECT: memory access through a non-pointer
mov %r2, 4096
ldxdw %r0, [%r2+0]
exit
