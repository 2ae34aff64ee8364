# EXPECT: write to read-only context field
# adversarial case: ctx write input
mov %r0, 0
stw [%r1+28], 1
mov %r0, 0
exit
