# EXPECT: pointer returned from program
mov %r0, %r10
exit
