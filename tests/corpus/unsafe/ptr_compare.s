# EXPECT: pointer comparison prohibited
mov %r0, 0
jgt %r1, %r10, +1
mov %r0, 1
exit
