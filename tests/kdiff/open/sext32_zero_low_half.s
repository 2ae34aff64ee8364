# kdiff case (open: not run by ctest): r0 = movsx32 r8 is 0 after jsgt r0, 0 and jsle r0, -1 both fall through, so r8's low half is 0, mov32 r5, r8 is 0 and the 8-byte load at the map value's start is in bounds. The kernel does not carry r0's range back to r8 across the sign extension and sees r5 as any u32. Sound; no exact twin rewrite covers it. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xb7b8f5c5475795ae.
# seed: 0xb7b8f5c5475795ae
# kernel: refuse: R5 unbounded memory access, make sure to bounds check any such access
lddw %r7, map_value[1]                  # 0
call local +10                          # 2
call 7                                  # 3
mov %r8, %r0                            # 4
movsx3264 %r0, %r8                      # 5
jsgt %r0, 0, +5                         # 6
mov %r1, -1                             # 7
jsle %r0, %r1, +3                       # 8
mov32 %r5, %r8                          # 9
add %r5, %r7                            # 10
ldxdw %r0, [%r5]                        # 11
exit                                    # 12
exit                                    # 13
