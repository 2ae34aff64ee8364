# EXPECT: read of uninitialised register
# r1-r5 are clobbered by a helper call
mov %r2, 1
call 5
mov %r0, %r2
and %r0, 1
exit
