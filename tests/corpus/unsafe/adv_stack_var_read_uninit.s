# EXPECT: read of uninitialised stack
# adversarial case: stack var read uninit
mov %r0, 0
ldxb %r6, [%r1+32]
and %r6, 7
stdw [%r10-8], 0
mov %r5, %r10
add %r5, -16
add %r5, %r6
ldxb %r0, [%r5+0]
mov %r0, 0
exit
