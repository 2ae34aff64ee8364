# EXPECT: read of uninitialised register
# near miss of safe/rw4_subreg_eq_zext_copy: w2 < 9 says nothing of the 64-bit r2
call 5
mov %r2, %r0
mov32 %r3, %r2
jlt32 %r2, 9, l0
mov %r0, 0
exit
l0:
jlt %r2, 9, l1
sub %r0, %r1
l1:
mov %r0, 0
exit
