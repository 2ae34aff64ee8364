# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# r3 = r2 links the two; w3 += 0 truncates r3 to 32 bits, a new value: the
# check on r3 says nothing of r2.
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
mov %r3, %r2
add32 %r3, 0
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
