# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr add ptr
mov %r0, 0
mov %r0, %r1
add %r0, %r10
mov %r0, 0
exit
