# EXPECT: write to read-only context field
# an 8-byte store over n_channels and the reserved word after it
mov %r2, 8
stxdw [%r1+80], %r2
mov %r0, 0
exit
