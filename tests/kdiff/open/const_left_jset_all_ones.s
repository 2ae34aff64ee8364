# kdiff case (open: not run by ctest): r9 = u8 + 1 (add32) is in [1, 256], so jset r5, r9 with r5 = -1 is always taken and the pointer arithmetic at 7-8 is dead; at 13 r9, the 16-bit sign-extending fill of that value, is positive, so the store through r5 = -1 at 14 is dead too. The kernel's twin decides the JSET (jgt r9, 0) but reads the 16-bit fill as unknown and refuses the store through the scalar r5. Sound; the fill rewrite needs the spilled register unchanged but for constant additions, and r8 here is r9 & 65535. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0x17bd6da191247552.
# seed: 0x17bd6da191247552
# kernel: refuse: math between map_value pointer and 4294967295 is not allowed
lddw %r7, map_value[1]                  # 0
ldxb %r9, [%r7+19]                      # 2
mov %r8, %r9                            # 3
add32 %r9, 1                            # 4
mov %r5, -1                             # 5
jset %r5, %r9, +2                       # 6
mov32 %r5, %r8                          # 7
add %r5, %r7                            # 8
mov %r8, %r9                            # 9
and %r8, 65535                          # 10
stxh [%r10-24], %r8                     # 11
ldxsh %r9, [%r10-24]                    # 12
jsge32 %r9, 1, +1                       # 13
stxdw [%r5+56], %r9                     # 14
mov %r0, %r8                            # 15
exit                                    # 16
