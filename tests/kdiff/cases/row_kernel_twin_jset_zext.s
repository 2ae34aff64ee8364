# kdiff case: r2 is in [5, 65535], so jset r0, r2 with r0 = mov32 -4 (0xfffffffc) is always taken and the write past the value behind it is dead; the kernel does not decide a JSET with the constant on the left, but accepts the exact twin jset32 r2, -4 (as jgt32 r2, 3): the constant's upper half is zero, so only r2's low half is tested
# seed: 0x2f4e1e80044ba6d6
# kernel: refuse: R4 min value is outside of the allowed memory range
# row: kernel-twin
lddw %r7, map_value[1]                  # 0
mov %r8, 0                              # 2
mov32 %r0, 0                            # 3
ldxh %r5, [%r7+24]                      # 4
mov32 %r2, %r5                          # 5
jsle32 %r2, 4, +4                       # 6
mov32 %r0, -4                           # 7
jset %r0, %r2, +2                       # 8
mov %r4, %r7                            # 9
stxdw [%r4+65], %r8                     # 10
exit                                    # 11
