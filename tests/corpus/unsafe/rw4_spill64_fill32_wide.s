# EXPECT: pointer arithmetic with unbounded scalar
# near miss of safe/rw4_spill64_fill32: a 64-bit value; the 32-bit fill is a truncation, not linked
stdw [%r10-16], 0
ldxdw %r2, [%r1+0]
stxdw [%r10-8], %r2
ldxw %r3, [%r10-8]
jgt %r2, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
