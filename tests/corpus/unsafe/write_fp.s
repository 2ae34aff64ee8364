# EXPECT: write to frame pointer r10
mov %r10, 0
mov %r0, 0
exit
