# EXPECT: pointer comparison prohibited
# adversarial case: ptr jeq const
mov %r0, 0
jeq %r1, 0x1000, l1
mov %r0, 0
exit
l1:
mov %r0, 1
exit
