# EXPECT: read-only
# adversarial case (second pass): merged 8-byte store through a moved context pointer covers n_channels and the read-only reserved field
mov %r0, 0
mov %r2, %r1
add %r2, 64
stdw [%r2+16], 0
exit
