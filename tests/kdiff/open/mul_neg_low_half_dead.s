# kdiff case (open: not run by ctest): r8 = u16 * -7 - 1 is in [-458746, -1], so its low 32 bits are in [2^32 - 458746, 2^32 - 1] and jgt32 r8, 1 is always taken: the map write at r7 + r9 (r9 the spilled low 16 bits, up to 65535) is dead. The kernel's multiplication by a negative constant leaves r8 unbounded and explores the write. Sound; the kernel twin has no rewrite for a multiplication. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xf3290495984a7627.
# seed: 0xf3290495984a7627
# kernel: refuse: R5 max value is outside of the allowed memory range
lddw %r7, map_value[1]                  # 0
ldxh %r8, [%r7+8]                       # 2
mul %r8, -7                             # 3
mov32 %r3, 1                            # 4
jset %r3, %r8, +0                       # 5
add %r8, -1                             # 6
stxdw [%r10-16], %r8                    # 7
ldxh %r9, [%r10-16]                     # 8
jgt32 %r8, 1, +3                        # 9
mov %r5, %r7                            # 10
add %r5, %r9                            # 11
stw [%r5], 0                            # 12
mov %r0, %r8                            # 13
exit                                    # 14
