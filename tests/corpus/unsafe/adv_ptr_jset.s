# EXPECT: pointer comparison prohibited
# adversarial case: ptr jset
mov %r0, 0
jset %r1, 1, l1
mov %r0, 0
exit
l1:
mov %r0, 1
exit
