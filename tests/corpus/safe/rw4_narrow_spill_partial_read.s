# EXPECT: accept
# a 2-byte read of the first bytes of a narrow spill of 1 is 1 (once a
# 16-bit range and refused): a return value in range
mov %r1, 1
stxw [%r10-8], %r1
ldxh %r0, [%r10-8]
exit
