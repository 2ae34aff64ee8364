# EXPECT: read of partially overwritten spilled pointer
# An atomic add over a context pointer whose low half was overwritten would
# read the upper half as an integer (and hand it back with fetch).
stxdw [%r10-8], %r1
stw [%r10-8], 0
mov %r2, 1
lock add [%r10-8], %r2
ldxw %r0, [%r10-4]
and %r0, 1
exit
