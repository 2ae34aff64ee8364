# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# w3 = w2 where r2 = x >> 40 (upper half known zero) copies r2 exactly, so
# it keeps r2's identity although r2 is itself derived from x: a check on
# r3 bounds r2.  (It was a new class of zero extensions of x >> 40, which
# r2, an x >> 40 itself, did not belong to.)
stdw [%r10-8], 0
ldxdw %r2, [%r1+0]
rsh %r2, 40
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
