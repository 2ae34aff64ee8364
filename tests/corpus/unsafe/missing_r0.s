# EXPECT: r0 not initialised at exit
ldxw %r2, [%r1+24]
exit
