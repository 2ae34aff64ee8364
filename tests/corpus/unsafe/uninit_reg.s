# EXPECT: read of uninitialised register
mov %r0, %r3
exit
