# EXPECT: unknown helper
# adversarial case: helper big
mov %r0, 0
call 100000
mov %r0, 0
exit
