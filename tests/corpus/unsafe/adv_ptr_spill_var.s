# EXPECT: misaligned or partial pointer spill
# adversarial case: ptr spill var
mov %r0, 0
ldxb %r6, [%r1+32]
and %r6, 8
mov %r5, %r10
add %r5, -16
add %r5, %r6
stdw [%r10-8], 0
stdw [%r10-16], 0
stxdw [%r5+0], %r1
ldxdw %r0, [%r10-8]
and %r0, 1
exit
