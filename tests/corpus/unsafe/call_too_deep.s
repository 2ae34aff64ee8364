# EXPECT: call chain too deep
call local f1
exit
f1:
call local f2
exit
f2:
call local f3
exit
f3:
call local f4
exit
f4:
call local f5
exit
f5:
call local f6
exit
f6:
call local f7
exit
f7:
call local f8
exit
f8:
mov %r0, 0
exit
