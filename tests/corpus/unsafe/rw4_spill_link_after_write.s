# EXPECT: read of uninitialised stack
# near miss of safe/rw4_spill32_fill32_link: the register changes after the spill; linked with its delta (r3 = r2 + 1), the check puts r3 in [1, 8], and fp-16 + 8 reads the uninitialised fp-8
stdw [%r10-16], 0
ldxw %r3, [%r1+24]
stxw [%r10-4], %r3
ldxw %r2, [%r10-4]
add %r3, 1
jgt %r2, 7, out
mov %r4, %r10
add %r4, -16
add %r4, %r3
ldxb %r0, [%r4+0]
out:
mov %r0, 0
exit
