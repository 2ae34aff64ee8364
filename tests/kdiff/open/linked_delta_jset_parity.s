# kdiff case (open: not run by ctest): r9 is r0's value before r0 += 1 (r0 = u32); jset r0, 1 not taken and jgt r0, 62 not taken leave r0 even in [2, 62], so r9 = r0 - 1 is in [1, 61] and the 2-byte store at r7 + r9 is within the 64-byte value. The kernel refuses with r9's minimum negative. Sound; no twin rewrite covers it. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xc17ab0c7b3c62bc1.
# seed: 0xc17ab0c7b3c62bc1
# kernel: refuse: R5 min value is negative, either use unsigned index or do a if (index >=0) check.
lddw %r7, map_value[1]                  # 0
ldxw %r0, [%r7+20]                      # 2
mov %r9, %r0                            # 3
add %r0, 1                              # 4
mov32 %r1, 1                            # 5
jset %r0, %r1, +4                       # 6
jgt %r0, 62, +3                         # 7
mov %r5, %r7                            # 8
add %r5, %r9                            # 9
sth [%r5], 0                            # 10
exit                                    # 11
