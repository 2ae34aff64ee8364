# EXPECT: read of uninitialised stack
# a 4-byte spill does not initialise the other half of its slot
mov %r1, 1
stxw [%r10-8], %r1
ldxdw %r0, [%r10-8]
exit
