# EXPECT: return value out of range
# writing the other half of the slot forgets the narrow spill's value
mov %r1, 1
stxw [%r10-8], %r1
mov %r2, 5
stxw [%r10-4], %r2
ldxw %r0, [%r10-8]
exit
