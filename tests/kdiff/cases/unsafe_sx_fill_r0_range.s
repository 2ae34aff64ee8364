# kdiff case: a halfword spilled and filled sign-extending: we prove the value returned (0-65535) within -32768..32767
# seed: 0x5566061d7f617591
# kernel: accept
lddw %r7, map_value[1]                  # 0
ldxh %r8, [%r7+40]                      # 2
stxh [%r10-32], %r8                     # 3
ldxsh %r2, [%r10-32]                    # 4
jsgt32 %r2, 0, +0                       # 5
mov %r0, %r8                            # 6
exit                                    # 7
