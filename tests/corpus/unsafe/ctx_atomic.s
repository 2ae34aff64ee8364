# EXPECT: atomic operation on context
mov %r2, 1
lock add32 [%r1+72], %r2
mov %r0, 0
exit
