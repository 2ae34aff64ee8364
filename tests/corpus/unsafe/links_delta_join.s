# HOOK: raw
# KERNEL: refuse
# EXPECT: pointer arithmetic with unbounded scalar
# Joins keep deltas apart: four paths make r7 = r6 + 4, + 3, + 2, + 1 (all
# safe) and reach the join first; the fifth, r7 = r6 + 9, is joined with
# one of their checkpoints (four explored ones are there).  The joined r7
# may be either, so it is no longer linked to r6; had it kept the
# checkpoint's delta, the check on r6 would have bounded it wrongly.
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
ldxdw %r2, [%r1+8]
mov %r7, %r6
jeq %r2, 0, far
jeq %r2, 1, d1
jeq %r2, 2, d2
jeq %r2, 3, d3
add %r7, 4
mov %r3, 0
mov %r3, 0
mov %r3, 0
ja join
d3:
add %r7, 3
mov %r3, 0
mov %r3, 0
mov %r3, 0
ja join
d2:
add %r7, 2
mov %r3, 0
mov %r3, 0
mov %r3, 0
ja join
d1:
add %r7, 1
mov %r3, 0
mov %r3, 0
mov %r3, 0
ja join
far:
add %r7, 9
mov %r3, 0
mov %r3, 0
mov %r3, 0
join:
jgt %r6, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r7
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
