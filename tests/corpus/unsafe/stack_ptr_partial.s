# EXPECT: misaligned or partial pointer spill
mov %r2, %r10
stxw [%r10-8], %r2
mov %r0, 0
exit
