# EXPECT: write to frame pointer r10
# adversarial case: lddw r10
mov %r0, 0
lddw %r10, 0x1000
mov %r0, 0
exit
