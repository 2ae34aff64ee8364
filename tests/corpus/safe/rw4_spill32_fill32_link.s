# EXPECT: accept
# spill 32, fill 32 of a value that fits: a check on the fill bounds the register
stdw [%r10-16], 0
ldxw %r3, [%r1+24]
stxw [%r10-4], %r3
ldxw %r2, [%r10-4]
jgt %r2, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
