# kdiff case: a byte spilled and filled sign-extending in a subprogram: a check that the fill is negative makes its path look dead, where the value (128-255) indexes past the frame into the caller's (the checking interpreter lets a callee touch live frames, so only the kernel shows it)
# seed: 0x11b13a2967a4c13c
# kernel: refuse: invalid variable-offset write to stack R5 var_off=(0x0; 0xff) off=0 size=1
call local +1                           # 0
exit                                    # 1
mov %r6, %r1                            # 2
ldxb %r9, [%r6+10]                      # 3
stxb [%r10-32], %r9                     # 4
ldxsb %r8, [%r10-32]                    # 5
jsge %r8, 0, +3                         # 6
mov %r5, %r10                           # 7
add %r5, %r9                            # 8
stxb [%r5], %r8                         # 9
mov %r0, %r8                            # 10
exit                                    # 11
