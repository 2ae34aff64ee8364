# EXPECT: stack access out of bounds
# r10 points just past the frame: nothing above it is ours
mov %r0, 0
ldxdw %r1, [%r10]
exit
