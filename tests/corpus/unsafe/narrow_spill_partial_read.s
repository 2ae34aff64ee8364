# EXPECT: return value out of range
# a 2-byte read of a narrow spill gets no value back, only a 16-bit range
mov %r1, 1
stxw [%r10-8], %r1
ldxh %r0, [%r10-8]
exit
