# EXPECT: accept
# the other way: r3 = zext(w2) below 9 means w2 below 9
call 5
mov %r2, %r0
mov32 %r3, %r2
jlt %r3, 9, l0
mov %r0, 0
exit
l0:
jlt32 %r2, 9, l1
sub %r0, %r1
l1:
mov %r0, 0
exit
