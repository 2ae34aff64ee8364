# HOOK: profiler
# EXPECT: write to read-only context field
# a merged store into the profiler's record (every field read-only)
mov %r2, 1
stxdw [%r1+40], %r2
mov %r0, 0
exit
