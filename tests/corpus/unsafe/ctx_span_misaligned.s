# EXPECT: misaligned 8 bytes at offset 76
# proto+n_channels are whole writable fields but the store is not 8-aligned
mov %r2, 1
stxdw [%r1+76], %r2
mov %r0, 0
exit
