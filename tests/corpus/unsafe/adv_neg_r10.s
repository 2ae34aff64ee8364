# EXPECT: write to frame pointer r10
# adversarial case: neg r10
mov %r0, 0
neg %r10
mov %r0, 0
exit
