# EXPECT: read of uninitialised stack
mov %r0, 0
stw [%r10-8], 1
ldxdw %r0, [%r10-8]
and %r0, 1
exit
