# EXPECT: recursive call
mov %r1, 3
call local f
exit
f:
jeq %r1, 0, +2
sub %r1, 1
call local f
mov %r0, 0
exit
