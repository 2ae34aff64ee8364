# HOOK: raw
# KERNEL: refuse
# EXPECT: stack access out of bounds
# Pruning keeps deltas apart: the fall-through path (explored first) makes
# r7 = r6 + 1 and is safe; the other makes r7 = r6 + 9 and reaches past
# the frame.  At the join both have r7 linked to r6, with other deltas: the
# first path's checkpoint must not cover the second.  (The movs keep the
# checkpoints 4 instructions apart, so that the join stores one.)
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r6, [%r1+0]
ldxdw %r2, [%r1+8]
mov %r7, %r6
jeq %r2, 0, far
add %r7, 1
mov %r3, 0
mov %r3, 0
mov %r3, 0
ja join
far:
add %r7, 9
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
