# EXPECT: stack access out of bounds
# a store below the 512-byte frame
mov %r0, 0
stdw [%r10-520], 1
exit
