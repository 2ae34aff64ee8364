# kdiff case (open: not run by ctest): r3 = -(u16 x) shifted by r5 = 0 is 0 or in [-65535, -1], never 1, so jne r3, 1 is always taken and the read at fp+0 is dead. The kernel's left shift of a range with a negative minimum (even by 0) leaves r3 unknown. Sound; no twin rewrite turns a shift by a register holding 0 into a copy. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0x2239db0a41c2e136.
# seed: 0x2239db0a41c2e136
# kernel: refuse: invalid read from stack R5 off=0 size=1
mov %r6, %r1                            # 0
lddw %r7, map_value[1]                  # 1
call 7                                  # 3
mov %r5, 0                              # 4
ldxh %r3, [%r6+16]                      # 5
neg %r3                                 # 6
lsh %r3, %r5                            # 7
jne %r3, 1, +2                          # 8
mov %r5, %r10                           # 9
ldxb %r0, [%r5]                         # 10
exit                                    # 11
