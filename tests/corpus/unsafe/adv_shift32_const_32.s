# EXPECT: shift amount out of range
# adversarial case: shift32 const 32
mov %r0, 0
mov %r2, 1
lsh32 %r2, 32
mov %r0, 0
exit
