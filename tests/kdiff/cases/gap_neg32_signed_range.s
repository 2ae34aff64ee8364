# kdiff case: neg32 of a 16-bit value keeps its signed 32-bit range ([-65535, 0]): 0 s>= it always, the access is dead
# seed: 0xf7ef17d3428a6f86
# kernel: accept
mov %r6, %r1
ldxh %r8, [%r6+44]
neg32 %r8
mov32 %r1, 0
jsge32 %r1, %r8, +2
mov %r5, %r10
ldxb %r0, [%r5+1]
mov %r0, %r8
exit
