# kdiff case: a multiplication by a negative constant bounds the product
# seed: 0x6fecbbb5c83c8c8b
# kernel: accept
mov %r6, %r1                            # 0
lddw %r7, map_value[1]                  # 1
mov %r8, 0                              # 3
ldxb %r9, [%r6+67]                      # 4
mul %r9, -2                             # 5
mov32 %r3, 0                            # 6
jsle32 %r9, %r3, +2                     # 7
mov %r5, %r7                            # 8
add %r5, %r9                            # 9
mov %r0, %r8                            # 10
exit                                    # 11
