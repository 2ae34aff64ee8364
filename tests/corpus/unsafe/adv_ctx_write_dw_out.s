# EXPECT: write to read-only context field
# adversarial case: ctx write dw out
mov %r0, 0
stdw [%r1+80], 1
mov %r0, 0
exit
