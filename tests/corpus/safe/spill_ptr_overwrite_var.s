# EXPECT: accept
# A variable-offset store that may touch a spilled pointer leaves the slot
# unreadable as data, but an 8-byte store of data over it makes it plain
# data again.
stxdw [%r10-8], %r1
ldxw %r2, [%r1+28]
and %r2, 4
mov %r3, %r10
add %r3, -8
add %r3, %r2
stw [%r3+0], 7
stdw [%r10-8], 9
ldxw %r0, [%r10-4]
and %r0, 1
exit
