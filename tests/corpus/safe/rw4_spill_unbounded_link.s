# EXPECT: accept
# an unbounded value spilled and filled at 64 bits: a check on the fill bounds the register
stdw [%r10-16], 0
ldxdw %r3, [%r1+0]
stxdw [%r10-8], %r3
ldxdw %r2, [%r10-8]
jgt %r2, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
