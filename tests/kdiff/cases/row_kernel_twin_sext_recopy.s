# kdiff case: r0 = movsx32 r8 is a function of r8's low half, which jge32 r8, 9 not taken bounds to [0, 8], so r0 is in [0, 8]; the kernel does not tie r0 to the later comparison of r8, but accepts the exact twin that makes the sign extension again after it
# seed: 0xd56ec5afc3552d8e
# kernel: refuse: value -2147483648 makes map_value pointer be out of bounds
# row: kernel-twin
lddw %r7, map_value[1]                  # 0
ldxdw %r8, [%r7+32]                     # 2
movsx3264 %r0, %r8                      # 3
mov %r1, 9                              # 4
jge32 %r8, %r1, +2                      # 5
mov %r5, %r7                            # 6
add %r5, %r0                            # 7
exit                                    # 8
