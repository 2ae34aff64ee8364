# EXPECT: division by possibly-zero value
mov %r0, 100
div %r0, 0
exit
