# EXPECT: accept
# A slot that held a spilled pointer is reused for data: one 8-byte store
# replaces the pointer whole, so every byte reads back as the stored value.
stxdw [%r10-8], %r1
ldxw %r2, [%r1+28]
stxdw [%r10-8], %r2
ldxw %r0, [%r10-4]
ldxb %r3, [%r10-7]
ldxdw %r4, [%r10-8]
and %r0, 1
exit
