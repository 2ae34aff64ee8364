# EXPECT: jump into the middle of lddw
mov %r0, 0
jeq %r0, 0, +1
lddw %r2, 0x1122334455667788
exit
