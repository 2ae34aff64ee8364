# EXPECT: partial read of spilled pointer
# fetch-add on a slot holding a spilled pointer would return the pointer as an integer
mov %r0, 0
stxdw [%r10-8], %r1
mov %r2, 0
lock fetch add [%r10-8], %r2
mov %r0, %r2
and %r0, 1
exit
