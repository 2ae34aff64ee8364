# EXPECT: read of uninitialised stack
# adversarial case (32-bit signed refinement): jslt32 sub neg.  (x & 15) - 8
# is [-8, 7]; a signed 32-bit test below 8 keeps the negative ones.  (With
# the unsigned jlt32 only [0, 7] takes the branch: that version is safe, and
# accepted since 32-bit tests keep the low half's bounds.)
mov %r0, 0
ldxw %r2, [%r1+28]
and %r2, 15
sub %r2, 8
jslt32 %r2, 8, l
mov %r0, 0
exit
l:
stdw [%r10-8], 0
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
mov %r0, 0
exit
