# kdiff case (open: not run by ctest): r8 = u32 - (-128) is in [128, 2^32 + 127], so jgt r8, 64 is always taken and the ringbuf_output of r8 bytes is dead; the strict kernel loses the unsigned range of a subtraction of a negative immediate and refuses reading the 64 unwritten stack bytes. Sound; the twin has no sub-to-add rewrite. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0x5e19f5acff108c21.
# seed: 0x5e19f5acff108c21
# kernel: accept
lddw %r7, map_value[1]                  # 0
ldxw %r8, [%r7+24]                      # 2
sub %r8, -128                           # 3
mov32 %r1, 1                            # 4
jset %r8, %r1, +8                       # 5
jgt %r8, 64, +7                         # 6
mov %r3, %r8                            # 7
lddw %r1, map[4]                        # 8
mov %r2, %r10                           # 10
add %r2, -64                            # 11
mov %r4, 0                              # 12
call 130                                # 13
mov %r0, %r8                            # 14
exit                                    # 15
