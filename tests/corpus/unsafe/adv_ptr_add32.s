# EXPECT: prohibited pointer arithmetic
# adversarial case: ptr add32
mov %r0, 0
mov %r2, %r1
add32 %r2, 8
ldxw %r0, [%r2+0]
mov %r0, 0
exit
