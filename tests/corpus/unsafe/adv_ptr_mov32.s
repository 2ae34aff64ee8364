# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr mov32
mov %r0, 0
mov32 %r0, %r1
and %r0, 1
exit
