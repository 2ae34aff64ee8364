# EXPECT: unknown helper
call 9999
mov %r0, 0
exit
