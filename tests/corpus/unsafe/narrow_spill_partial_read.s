# EXPECT: return value out of range
# a 2-byte read of the first bytes of a narrow spill gets the truncated
# value back: 0x10005 reads as 5, outside the tuner's return range
mov %r1, 0x10005
stxw [%r10-8], %r1
ldxh %r0, [%r10-8]
exit
