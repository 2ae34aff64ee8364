# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr div
mov %r0, 0
mov %r2, %r1
div %r2, 3
mov %r0, 0
exit
