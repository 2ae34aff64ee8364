# EXPECT: program does not end in exit or jump
mov %r0, 0
