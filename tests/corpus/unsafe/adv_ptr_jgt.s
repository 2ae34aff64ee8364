# EXPECT: pointer comparison prohibited
# adversarial case: ptr jgt
mov %r0, 0
jgt %r1, 0x7fff, l1
mov %r0, 0
exit
l1:
mov %r0, 1
exit
