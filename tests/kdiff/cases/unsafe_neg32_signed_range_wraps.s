# kdiff case: neg32 of a 32-bit value may wrap: no signed range, the test stays open and the access behind it is checked (twin of gap_neg32_signed_range)
# seed: 0x0
# kernel: refuse: invalid read from stack R5 off=1 size=1
mov %r6, %r1
ldxw %r8, [%r6+44]
neg32 %r8
mov32 %r1, 0
jsge32 %r1, %r8, +2
mov %r5, %r10
ldxb %r0, [%r5+1]
mov %r0, %r8
exit
