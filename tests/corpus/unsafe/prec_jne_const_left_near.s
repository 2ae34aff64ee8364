# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# r3 = 7 instead: r2 != 7 still allows 8.  Near miss of
# safe/prec_jne_const_left.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r2, [%r1+0]
jgt %r2, 8, out
mov %r3, 7
jeq %r3, %r2, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
