# EXPECT: accept
# a __u32 tested through one mov32 copy divides through another
ldxdw %r3, [%r1+0]
div %r3, 1000
mov32 %r2, %r3
jeq %r2, 0, out
ldxdw %r5, [%r1+8]
mov32 %r4, %r3
div %r5, %r4
out:
mov %r0, 0
exit
