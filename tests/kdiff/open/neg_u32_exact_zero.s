# kdiff case (open: not run by ctest): the subprogram returns -(u32 x): 0, or in [-(2^32 - 1), -1], which is above 409 unsigned; so jge r8, 410 not taken leaves r8 exactly 0 and the byte store is at fp-104. The kernel keeps only r8 < 410 (var_off (0; 0x1ff)) and refuses the variable-offset stack write. Sound; NEG's twin (mul -1) gives the kernel no better range. Found by the long run (bench/kdiff/run.sh, 2026-12-02), program 0xe06a16a7282f1d8c.
# seed: 0xe06a16a7282f1d8c
# kernel: refuse: invalid variable-offset write to stack R5 var_off=(0x0; 0x1ff) off=-104 size=1
mov %r6, %r1                            # 0
ldxw %r8, [%r6+24]                      # 1
mov %r4, %r8                            # 2
call local +7                           # 3
mov %r8, %r0                            # 4
jge %r8, 410, +4                        # 5
mov %r5, %r10                           # 6
add %r5, -104                           # 7
add %r5, %r8                            # 8
stxb [%r5], %r8                         # 9
exit                                    # 10
mov %r8, %r4                            # 11
neg %r8                                 # 12
mov %r0, %r8                            # 13
exit                                    # 14
