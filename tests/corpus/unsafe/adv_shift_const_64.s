# EXPECT: shift amount out of range
# adversarial case: shift const 64
mov %r0, 0
mov %r2, 1
lsh %r2, 64
mov %r0, 0
exit
