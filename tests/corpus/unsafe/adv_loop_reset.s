# EXPECT: infinite loop
# adversarial case: loop reset
mov %r0, 0
mov %r2, 0
l:
add %r2, 1
jgt %r2, 5, r
ja l
r:
mov %r2, 0
ja l
