# EXPECT: write to read-only context field
# 8 bytes over max_ranks_per_nvl_domain and abi_version, ending where algo starts
mov %r2, 1
stxdw [%r1+64], %r2
mov %r0, 0
exit
