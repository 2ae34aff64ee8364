# kdiff case (open: not run by ctest): r8 = u16 & 240 is a multiple of 16, unchanged by movsx16 (bit 15 is 0), so jne r8, 1 is always taken and the store of the map pointer into the map is dead. The kernel's movsx loses the known bits; the kernel twin (movsx as a copy where the value fits) is tried and the strict kernel accepts its decision, but then refuses the twin for the never-taken back edge jlt r9, 0 that it explores speculatively (infinite loop detected), so no row explains it. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0x12c848152030ecde.
# seed: 0x12c848152030ecde
# kernel: accept
mov %r6, %r1                            # 0
lddw %r7, map_value[1]                  # 1
ldxh %r8, [%r6+20]                      # 3
mov %r9, 0                              # 4
and %r8, 240                            # 5
movsx1664 %r8, %r8                      # 6
jne %r8, 1, +2                          # 7
mov %r5, %r7                            # 8
stxdw [%r7+56], %r5                     # 9
jlt %r9, 0, -4                          # 10
mov %r0, %r8                            # 11
exit                                    # 12
