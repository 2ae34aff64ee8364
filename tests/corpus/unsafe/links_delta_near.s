# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# r7 = r6 + 9 with r6 at most 7: r7 up to 16, and fp-16 + 16 is out of the
# frame.  Near miss of safe/links_delta_add.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
mov %r7, %r6
add %r7, 9
jgt %r6, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r7
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
