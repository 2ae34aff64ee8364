# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# r3 = r2 links the two; neg r3 is a new value: the check on r3 (in
# [-8, -1]) says nothing of r2, which is then in [1, 8].
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
and %r2, 0xff
mov %r3, %r2
neg %r3
jsgt %r3, -1, out
jslt %r3, -8, out
mov %r4, %r10
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
