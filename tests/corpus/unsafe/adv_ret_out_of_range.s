# EXPECT: return value out of range
# adversarial case: ret out of range
mov %r0, 0
mov %r0, 2
exit
