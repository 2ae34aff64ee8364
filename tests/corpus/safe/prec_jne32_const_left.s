# HOOK: raw
# KERNEL: accept
# EXPECT: accept
# The same in 32 bits, as jne taken: `w3 = 8; if w3 != w2` with w2 in
# [0, 8] leaves w2 in [0, 7].
stdw [%r10-8], 0
stdw [%r10-16], 0
ldxdw %r2, [%r1+0]
mov32 %r2, %r2
jgt %r2, 8, out
mov32 %r3, 8
jne32 %r3, %r2, use
ja out
use:
mov %r4, %r10
add %r4, -8
add %r4, %r2
ldxb %r0, [%r4+0]
exit
out:
mov %r0, 0
exit
