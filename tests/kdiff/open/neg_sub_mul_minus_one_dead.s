# kdiff case (open: not run by ctest): r8 = -(u32 x) (lsh32 0 zero-extends, mul -1 negates) is in [-(2^32 - 1), 0], so jsle r8, 0 is always taken and the stack write at fp + r8 is dead. The kernel's multiplication by -1 leaves r8 unbounded. Sound; no twin rewrite for a multiplication by -1 (NEG becomes mul -1, not the reverse). Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xc159c1af7c003863.
# seed: 0xc159c1af7c003863
# kernel: refuse: invalid unbounded variable-offset write to stack R5
lddw %r7, map_value[1]                  # 0
ldxdw %r8, [%r7+56]                     # 2
lsh32 %r8, 0                            # 3
mul %r8, -1                             # 4
lsh %r8, 0                              # 5
jsle %r8, 0, +3                         # 6
mov %r5, %r10                           # 7
add %r5, %r8                            # 8
stb [%r5-3], 0                          # 9
mov %r0, %r8                            # 10
exit                                    # 11
