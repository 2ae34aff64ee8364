# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# r3 = r2 links the two; be16 r3 swaps r3's bytes, a new value: the check
# on r3 says nothing of r2 (r2 = 0x100 gives r3 = 1).
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0xffff
mov %r3, %r2
be16 %r3
jgt %r3, 7, out
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
