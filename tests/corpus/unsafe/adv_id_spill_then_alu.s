# EXPECT: stack access out of bounds
# adversarial case: id spill then alu (linked with its delta, r3 is r2 + 0x1000: out of the frame)
mov %r0, 0
ldxdw %r2, [%r1+0]
stxdw [%r10-16], %r2
add %r2, 0x1000
ldxdw %r3, [%r10-16]
jgt %r3, 7, exit
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
