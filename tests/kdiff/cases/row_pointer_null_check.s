# kdiff case: the context pointer (which cannot be null) compared with 0
# seed: 0x583afb6005b2b82f
# kernel: refuse: R5 pointer comparison prohibited
# row: pointer-null-check
# kernel-mode: strict
mov %r6, %r1
mov %r8, 0
mov %r5, %r6
jeq %r5, 0, +1
mov %r8, 1
mov %r0, %r8
exit
