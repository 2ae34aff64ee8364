# kdiff case: a byte spilled and filled sign-extending: a check that the fill is negative makes its path look dead, where the value (128-255) indexes past the top of the frame
# seed: 0x9c3e3f93104f5006
# kernel: refuse: invalid variable-offset write to stack R5 var_off=(0x0; 0xff) off=0 size=1
lddw %r7, map_value[1]                  # 0
ldxsw %r8, [%r7+48]                     # 2
and %r8, 255                            # 3
stxb [%r10-64], %r8                     # 4
ldxsb %r5, [%r10-64]                    # 5
mov %r3, 0                              # 6
jsle %r3, %r5, +3                       # 7
mov %r5, %r10                           # 8
add %r5, %r8                            # 9
stb [%r5], 0                            # 10
mov %r0, %r8                            # 11
exit                                    # 12
