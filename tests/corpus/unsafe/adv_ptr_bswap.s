# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr bswap
mov %r0, 0
mov %r0, %r1
be64 %r0
and %r0, 1
exit
