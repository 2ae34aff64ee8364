# EXPECT: return value out of range
# adversarial case: ret 32bit
mov %r0, 0
lddw %r0, 0x100000000
exit
