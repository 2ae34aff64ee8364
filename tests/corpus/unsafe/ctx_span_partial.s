# EXPECT: context access width does not match field
# a 2-byte store inside algo is a partial write of one field
mov %r2, 1
stxh [%r1+72], %r2
mov %r0, 0
exit
