# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr sub
mov %r0, 0
mov %r0, %r1
sub %r0, %r10
and %r0, 1
exit
