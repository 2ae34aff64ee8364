# EXPECT: accept
# HOOK: profiler
# a bounds check on one copy of a value refines the other copy
ldxw %r2, [%r1+40]
mov %r3, %r2
jgt %r2, 7, +3
mov %r4, %r10
add %r4, -8
add %r4, %r3
stdw [%r10-8], 0
mov %r0, 0
exit
