# EXPECT: write to frame pointer r10
# adversarial case: be r10
mov %r0, 0
be16 %r10
mov %r0, 0
exit
