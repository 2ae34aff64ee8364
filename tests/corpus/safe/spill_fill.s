# EXPECT: accept
# a context pointer survives a spill to the stack and a fill back
stxdw [%r10-8], %r1
mov %r1, 0
ldxdw %r2, [%r10-8]
ldxw %r0, [%r2+24]
and %r0, 1
exit
