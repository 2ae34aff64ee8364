# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# w3 = w2 where r2's upper half is unknown is a truncation: a check on r3
# says nothing of r2.  Near miss: safe/ids_mov32_derived.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
rsh %r2, 20
mov32 %r3, %r2
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
