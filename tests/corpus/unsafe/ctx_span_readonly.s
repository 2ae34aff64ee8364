# EXPECT: write to read-only context field
# an 8-byte store over nccl_algo and nccl_proto: inputs, not outputs
mov %r2, 1
stxdw [%r1+48], %r2
mov %r0, 0
exit
