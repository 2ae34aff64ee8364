# kdiff case (open: not run by ctest): r2 = u8 * (s16 * -4) has its two low bits 0, which bswap32 moves to bits 24-25; after neg, jgt32 r2, 63 not taken allows only bswap32 = 0 (a value 2^32 - k, k in [1, 63], has bits 24-25 set), so r2 = 0 and the byte read is at fp-58, zeroed. The kernel keeps r2 in var_off (0; 0x3f) and refuses the variable-offset read. Sound (checked for all 2^24 inputs); no twin rewrite models the known bits through bswap and neg. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xafddfd54b89b9151.
# seed: 0xafddfd54b89b9151
# kernel: refuse: invalid variable-offset read from stack R5 var_off=(0x0; 0x3f) off=-58 size=1
lddw %r7, map_value[1]                  # 0
ldxdw %r8, [%r7+40]                     # 2
stdw [%r10-64], 0                       # 3
ldxsh %r9, [%r7+62]                     # 4
mul %r9, -4                             # 5
ldxb %r2, [%r7+38]                      # 6
mul %r2, %r9                            # 7
bswap32 %r2                             # 8
neg %r2                                 # 9
jgt32 %r2, 63, +4                       # 10
mov %r5, %r10                           # 11
add %r5, -64                            # 12
add %r5, %r2                            # 13
ldxb %r0, [%r5+6]                       # 14
mov %r0, %r8                            # 15
exit                                    # 16
