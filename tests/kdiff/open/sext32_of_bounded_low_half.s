# kdiff case (open: not run by ctest): r0 = movsx32 r8 is a function of r8's low half; jge32 r8, 9 not taken bounds that low half to [0, 8], so r0 is in [0, 8] and r7 + r0 stays in the map value. The kernel does not tie r0 to r8's later 32-bit comparison (to it r0 is any s32). Sound; the twin re-makes only 32-bit copies (mov32) after a 32-bit comparison, not sign extensions. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xd56ec5afc3552d8e.
# seed: 0xd56ec5afc3552d8e
# kernel: refuse: value -2147483648 makes map_value pointer be out of bounds
lddw %r7, map_value[1]                  # 0
ldxdw %r8, [%r7+32]                     # 2
movsx3264 %r0, %r8                      # 3
mov %r1, 9                              # 4
jge32 %r8, %r1, +2                      # 5
mov %r5, %r7                            # 6
add %r5, %r0                            # 7
exit                                    # 8
