# EXPECT: r0 not initialised at exit
# adversarial case: subprog ret uninit
mov %r0, 0
call local f
exit
f:
exit
