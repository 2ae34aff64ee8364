# kdiff case (open: not run by ctest): r9 = u16 + 10 is in [10, 65545] and clearing its two low bits (and -4) leaves it at least 8, so jge r9, 1 is always taken and the read of unwritten stack at fp-480 is dead; the strict kernel's AND takes the minimum from the known bits alone (0) and refuses the read. Sound; no twin rewrite covers an AND. Found by kdiff_fuzz -t 90 -s 0x5eed7 (2026-12-02).
# seed: 0x6d68b842b6db6170
# kernel: accept
mov %r6, %r1                            # 0
lddw %r7, map_value[1]                  # 1
ldxh %r8, [%r6+50]                      # 3
ldxh %r9, [%r7+48]                      # 4
add %r9, 10                             # 5
and %r9, -4                             # 6
jge %r9, 1, +3                          # 7
mov %r5, %r10                           # 8
add %r5, -480                           # 9
ldxw %r0, [%r5]                         # 10
mov %r0, %r8                            # 11
exit                                    # 12
