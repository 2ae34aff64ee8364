# EXPECT: stack access out of bounds
# a 520-byte local array: its first byte lies beyond the frame
mov %r0, 0
stdw [%r10-512], 0
stb [%r10-513], 1
exit
