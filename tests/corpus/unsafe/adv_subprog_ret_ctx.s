# EXPECT: pointer returned from program
# adversarial case: subprog ret ctx
mov %r0, 0
call local f
exit
f:
mov %r0, %r1
exit
