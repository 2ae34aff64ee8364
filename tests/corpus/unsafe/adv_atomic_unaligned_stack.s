# EXPECT: misaligned atomic operation
# an 8-byte atomic at fp-12 is misaligned (split locked access)
mov %r0, 0
stdw [%r10-16], 0
stdw [%r10-8], 0
mov %r2, 1
lock add [%r10-12], %r2
mov %r0, 0
exit
