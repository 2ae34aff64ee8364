# kdiff case (open: not run by ctest): r9 = r8 + 1 with r8's low half below 7 (or r8 = 0), so r9's low half is in [1, 7] and r9 is never 0: after jset 1, r9 falls through (r9 even), jgt r9, 0 is always taken and the pointer addition at 15 is dead (r0, the 8-byte fill over a byte store into zeroed stack, is in [0, 6] anyway). The kernel refuses the addition with r0 unbounded; its twin (jset r9, 1) is refused the same way. Sound; no twin rewrite covers it. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xb2d207fb694f45fb.
# seed: 0xb2d207fb694f45fb
# kernel: refuse: math between map_value pointer and register with unbounded min value is not allowed
lddw %r7, map_value[1]                  # 0
call 7                                  # 2
mov %r8, %r0                            # 3
stdw [%r10-40], 0                       # 4
jlt32 %r8, 7, +1                        # 5
mul %r8, 0                              # 6
mov %r9, %r8                            # 7
stxb [%r10-40], %r9                     # 8
add %r9, 1                              # 9
ldxdw %r0, [%r10-40]                    # 10
mov32 %r4, 1                            # 11
jset %r4, %r9, +3                       # 12
jgt %r9, 0, +2                          # 13
mov %r5, %r7                            # 14
add %r5, %r0                            # 15
exit                                    # 16
