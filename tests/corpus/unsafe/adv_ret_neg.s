# EXPECT: return value out of range
# adversarial case: ret neg
mov %r0, 0
mov %r0, -1
exit
