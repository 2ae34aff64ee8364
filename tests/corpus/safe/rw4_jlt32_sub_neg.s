# EXPECT: accept
# (x & 15) - 8 is [-8, 7]; the low half of a negative one is at least
# 0xfffffff8, so an unsigned 32-bit test below 8 keeps only [0, 7]
mov %r0, 0
ldxw %r2, [%r1+28]
and %r2, 15
sub %r2, 8
jlt32 %r2, 8, l
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
