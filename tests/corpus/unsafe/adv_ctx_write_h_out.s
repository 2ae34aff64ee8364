# EXPECT: context access width does not match field
# adversarial case: ctx write h out
mov %r0, 0
sth [%r1+72], 1
mov %r0, 0
exit
