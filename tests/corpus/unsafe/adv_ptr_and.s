# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr and
mov %r0, 0
mov %r0, %r1
and %r0, 1
exit
