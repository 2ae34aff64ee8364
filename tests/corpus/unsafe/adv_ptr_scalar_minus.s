# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr scalar minus
mov %r0, 0
mov %r2, 5
sub %r2, %r1
and %r2, 1
mov %r0, %r2
exit
