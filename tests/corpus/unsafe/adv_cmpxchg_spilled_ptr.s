# EXPECT: partial read of spilled pointer
# cmpxchg on a slot holding a spilled pointer would load the pointer into r0 as an integer
mov %r0, 0
stxdw [%r10-8], %r1
mov %r0, 0
mov %r2, 0
lock cmpxchg [%r10-8], %r2
and %r0, 1
exit
