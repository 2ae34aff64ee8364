# EXPECT: loop not proven to terminate within the instruction budget
# adversarial case: loop overflow
mov %r0, 0
mov %r2, 1
l:
add %r2, 1
jne %r2, 0, l
mov %r0, 0
exit
