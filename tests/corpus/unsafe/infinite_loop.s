# EXPECT: infinite loop
mov %r0, 0
loop:
ldxw %r2, [%r1+24]
ja loop
