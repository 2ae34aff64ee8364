# kdiff case: three frames using 256 bytes of stack each (768 in all)
# seed: 0x0
# kernel: refuse: combined stack size of 3 calls is 768. Too large
# row: call-chain-stack
stdw [%r10-256], 1
call local +2
ldxdw %r0, [%r10-256]
exit
stdw [%r10-256], 2
call local +2
ldxdw %r0, [%r10-256]
exit
stdw [%r10-256], 3
ldxdw %r0, [%r10-256]
exit
