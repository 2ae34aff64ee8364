# EXPECT: loop not proven to terminate within the instruction budget
# adversarial case: loop overflow32
mov %r0, 0
mov %r2, 1
l:
add32 %r2, 1
jne %r2, 0, l
mov %r0, 0
exit
