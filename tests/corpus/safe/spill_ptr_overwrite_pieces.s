# EXPECT: accept
# A spilled pointer overwritten piece by piece (1 + 1 + 2 + 4 bytes, in any
# order) is plain data once every byte has been written; a pointer spilled
# again over the remnant comes back with its type.
stxdw [%r10-8], %r1
stb [%r10-7], 1
mov %r2, 2
stxh [%r10-6], %r2
stw [%r10-4], 3
stb [%r10-8], 4
ldxdw %r3, [%r10-8]
stxdw [%r10-16], %r1
stw [%r10-16], 5
ldxw %r4, [%r10-16]
stxdw [%r10-16], %r1
ldxdw %r5, [%r10-16]
ldxw %r0, [%r5+28]
and %r0, 1
exit
