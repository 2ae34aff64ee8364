# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr neg
mov %r0, 0
mov %r0, %r1
neg %r0
and %r0, 1
exit
