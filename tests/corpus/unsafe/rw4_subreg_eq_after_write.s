# EXPECT: read of uninitialised register
# near miss of safe/rw4_subreg_eq_zext_copy: r2 changes after the copy
call 5
mov %r2, %r0
mov32 %r3, %r2
add %r2, 1
jlt32 %r2, 9, l0
mov %r0, 0
exit
l0:
jlt %r3, 9, l1
sub %r0, %r1
l1:
mov %r0, 0
exit
