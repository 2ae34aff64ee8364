# EXPECT: recursive call
# adversarial case: mutual recursion
mov %r0, 0
call local f
mov %r0, 0
exit
f:
call local g
mov %r0, 0
exit
g:
call local f
mov %r0, 0
exit
