# EXPECT: read of uninitialised stack
# adversarial case: atomic uninit stack
mov %r0, 0
mov %r2, 1
lock fetch add [%r10-8], %r2
mov %r0, %r2
and %r0, 1
exit
