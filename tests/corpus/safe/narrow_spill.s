# EXPECT: accept
# a 32-bit scalar stored at a 4-aligned stack offset comes back with its
# value (truncated to 32 bits) from a 4-byte load of the same bytes
lddw %r1, 0x100000001
stxw [%r10-4], %r1
ldxw %r0, [%r10-4]
exit
