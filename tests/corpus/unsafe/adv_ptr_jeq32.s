# EXPECT: pointer comparison prohibited
# adversarial case: ptr jeq32
mov %r0, 0
jeq32 %r1, 0, l1
mov %r0, 0
exit
l1:
mov %r0, 1
exit
