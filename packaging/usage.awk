# SPDX-License-Identifier: Apache-2.0
# Reads `ncclbpf -h` and prints OBJECT<TAB>SYNOPSIS for each line of the
# command's usage table ("ncclbpf verify OBJ [PROGRAM] ..."): the one place
# the man pages and the bash completion learn the verbs from.
{
	sub(/^usage:[ \t]*/, "")
	sub(/^[ \t]+/, "")
	if ($1 != "ncclbpf" || $2 !~ /^[a-z][a-z0-9-]*$/)
		next
	line = $0
	sub(/^ncclbpf[ \t]+/, "", line)
	print $2 "\t" line
}
