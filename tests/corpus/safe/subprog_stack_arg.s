# EXPECT: accept
# a function writes through a pointer into its caller's frame
stdw [%r10-8], 0
mov %r1, %r10
add %r1, -8
call local f
ldxdw %r0, [%r10-8]
and %r0, 1
exit
f:
stdw [%r1+0], 1
mov %r0, 0
exit
