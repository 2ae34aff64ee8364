#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Doc claims about the command that can be checked mechanically:
#  - every `ncclbpf OBJECT [VERB] --option` in a code block of README.md,
#    docs/*.md and docs/man/*.txt names an object, verb and options the
#    command has (its synopsis or summary in `ncclbpf help OBJECT [VERB]`);
#  - the exit status table of docs/operations.md and the man page's
#    (docs/man/ncclbpf.txt) say the same, and their codes are the
#    command's (src/cli/cli.h);
#  - docs/operations.md's Prometheus families and labels are a live export's;
#  - the README's "Using it" runs as pasted.
# usage: cli_docs.sh NCCLBPF SOURCE_DIR TMPDIR
set -u
BIN=$1 SRC=$2 T=$3
fail=0
rm -rf "$T" && mkdir -p "$T" || exit 1
command -v jq > /dev/null || { echo "SKIP: jq not installed"; exit 77; }
bad() { echo "FAIL: $*"; fail=1; }

# ---- command lines in the docs
# FILE:LINE<TAB>OBJECT VERB-or-empty<TAB>--options, from code blocks and indented man examples.
for f in "$SRC"/README.md "$SRC"/docs/*.md "$SRC"/docs/man/*.txt; do
	awk -v f="${f#"$SRC"/}" '
	/^```/ { code = !code; next }
	{ line = $0 }
	!code && f !~ /\.txt$/ { next }
	f ~ /\.txt$/ && line !~ /^  / { next }
	{
		sub(/#.*/, "", line)
		n = split(line, w, /[ \t]+/)
		for (i = 1; i < n; i++) {
			# The command name where a shell runs it: first, or after --, sudo,
			# a pipe, an environment assignment.
			if (w[i] !~ /^"?(.*\/)?ncclbpf$/ || w[i] ~ /=/ || (i > 1 && w[i] !~ /^"/ &&
			    w[i - 1] !~ /^(--|sudo|nice|time|&&|\|\||;|\||\$\(|[A-Z_][A-Z0-9_]*=.*)$/))
				continue
			j = i + 1
			while (j <= n && w[j] ~ /^-/ && w[j] != "--")
				j++
			if (w[j] == "--")
				j++
			if (w[j] !~ /^[a-z][a-z-]*$/)
				continue
			obj = w[j]; verb = ""; opts = ""
			if (w[j + 1] ~ /^[a-z]+$/)
				verb = w[j + 1]
			for (k = j + 1; k <= n && w[k] !~ /^([|;&]+|&&|\|\||\))$/; k++)
				if (w[k] ~ /^--[a-z]/) { o = w[k]; sub(/=.*/, "", o); opts = opts " " o }
			printf "%s:%d\t%s\t%s\t%s\n", f, FNR, obj, verb, opts
		}
	}' "$f"
done > "$T/lines"
[ -s "$T/lines" ] || bad "no command lines found in the docs"
# Every object, verb and help text from one `help`, checked in one pass
# (a process per doc line took most of this test's time on a loaded machine).
"$BIN" -j help | jq -r '.commands[] | [.object, (.verb // ""), .synopsis + " " + .summary] | @tsv' > "$T/help.tsv"
awk -F'\t' '
NR == FNR { objs[$1] = 1; if ($2 != "") verbs[$1] = verbs[$1] " " $2; text[$1, $2] = text[$1, $2] " " $3; next }
{
	where = $1; obj = $2; verb = $3; n++
	if (!(obj in objs)) { print "FAIL: " where ": no object \047" obj "\047"; bad = 1; next }
	t = ""
	if (obj in verbs) {
		if (index(verbs[obj] " ", " " verb " ") == 0 || verb == "") {
			print "FAIL: " where ": \047" obj " " (verb == "" ? "(no verb)" : verb) "\047: " obj "\047s verbs are" verbs[obj] " "
			bad = 1; next
		}
		t = text[obj, verb]
	} else {
		for (k in text) { split(k, kk, SUBSEP); if (kk[1] == obj) t = t text[k] }
	}
	m = split($4, o, " ")
	for (i = 1; i <= m; i++)
		if (!match(t, o[i] "([^a-z-]|$)")) { print "FAIL: " where ": \047" obj " " verb "\047 has no option " o[i]; bad = 1 }
}
END { print n > "/dev/stderr"; exit bad }' "$T/help.tsv" "$T/lines" 2> "$T/nlines" || fail=1
n=$(cat "$T/nlines")
echo "ok: $n command lines in the docs name objects, verbs and options the command has"

# ---- one exit status table
grep -E '^#define CLI_(OK|NO|USAGE) ' "$SRC/src/cli/cli.h" | awk '{print $3}' | tr '\n' ' ' > "$T/codes"
[ "$(cat "$T/codes")" = "0 1 2 " ] || bad "cli.h's exit codes are $(cat "$T/codes"), the docs say 0 1 2"
awk '/^## Exit status/ { on = 1; next } /^## / { on = 0 } on && /^\* [0-9]: / { sub(/^\* /, ""); print }' \
	"$SRC/docs/man/ncclbpf.txt" > "$T/man"
awk '/^### Exit status/ { on = 1; next } /^#/ { on = 0 } on && /^\| [0-9] \|/ {
	sub(/^\| /, ""); sub(/ \|$/, ""); sub(/ \| /, ": "); print }' "$SRC/docs/operations.md" > "$T/ops"
[ "$(wc -l < "$T/man")" = 3 ] || bad "the man page's exit status section has $(wc -l < "$T/man") codes"
if cmp -s "$T/man" "$T/ops"; then
	echo "ok: docs/operations.md and the man page give the same exit status table"
else
	bad "the exit status tables differ (man page < > docs/operations.md):"
	diff "$T/man" "$T/ops"
fi

# ---- docs/operations.md's table of Prometheus families: a live job's
# export has every family it names with the labels it gives (deploy.md
# points there for which ones carry a pid), and no family it leaves out.
# One "FAMILY LABEL" pair a line ("FAMILY -" for none), histogram suffixes
# and their le dropped.
awk -F'|' '/^### Prometheus/ { on = 1; next } on && /^#/ { exit }
	on && /^\| `ncclbpf_/ {
		labels = $4; gsub(/\([^)]*\)/, "", labels); gsub(/[ `]/, "", labels)
		if (labels == "") labels = "-"
		n = split(labels, l, ",")
		names = $2
		while (match(names, /`ncclbpf_[a-z_]*`/)) {
			for (i = 1; i <= n; i++) print substr(names, RSTART + 1, RLENGTH - 2), l[i]
			names = substr(names, RSTART + RLENGTH)
		}
	}' "$SRC/docs/operations.md" | sort -u > "$T/fam.doc"
mkdir -p "$T/pctl" && chmod 700 "$T/pctl"
NCCLBPF_CTL_DIR=$T/pctl "$BIN" sim --serve "$(dirname "$BIN")/policies/size_aware.bpf.o" > /dev/null 2>&1 &
J=$!
i=0
until NCCLBPF_CTL_DIR=$T/pctl "$BIN" -j export "$J" > "$T/fam.json" 2> /dev/null &&
      grep -q ncclbpf_tuner_calls_total "$T/fam.json" || [ $i -gt 300 ]; do
	sleep 0.1; i=$((i + 1))
done
kill -TERM "$J"; wait "$J"
jq -r '.metrics[] | .name as $n | ([.labels | keys[] | select(. != "le")] | if length == 0 then ["-"] else . end)[] |
	"\($n | sub("_(bucket|sum|count)$"; "")) \(.)"' "$T/fam.json" | sort -u > "$T/fam.live"
cut -d' ' -f1 "$T/fam.live" | sort -u > "$T/fam.names"
[ -s "$T/fam.live" ] && [ "$(wc -l < "$T/fam.doc")" -gt 10 ] || bad "no families to compare (export or table missing)"
# Documented pairs of the families this job exports (the others need maps, a net context, a policy's NCCLBPF_EXPORT).
awk 'NR == FNR { live[$1] = 1; next } live[$1]' "$T/fam.names" "$T/fam.doc" > "$T/fam.doc.live"
if diff "$T/fam.doc.live" "$T/fam.live" > "$T/fam.diff"; then
	echo "ok: docs/operations.md's Prometheus families and labels are the export's ($(wc -l < "$T/fam.names") families)"
else
	bad "docs/operations.md's Prometheus table (<) and a live export (>) differ:"; cat "$T/fam.diff"
fi

# ---- README's "Using it", as a shell runs it pasted
# From a directory whose build/ is this build, with a port of its own and a
# control directory of its own: the verbs answer, the backgrounded job and
# exporter print no INFO lines, and the job ends with no rank disagreeing.
if command -v curl > /dev/null && command -v bash > /dev/null; then
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$T/readme/ctl" && chmod 700 "$T/readme/ctl" && ln -s "$(cd "$(dirname "$BIN")" && pwd)" "$T/readme/build"
	awk '/^## Using it/ { on = 1 } on && /^```sh/ { code = 1; next } code && /^```/ { exit } code' \
		"$SRC/README.md" | sed "s/9464/$port/g" > "$T/readme/using.sh"
	# The README's one-second pauses, as waits for what they stand for (the
	# job serving, the exporter listening): a loaded machine takes longer.
	{
		echo 'job_up() { i=0; until build/ncclbpf ps "$1" > /dev/null 2>&1 || [ $i -gt 600 ]; do sleep 0.1; i=$((i + 1)); done; }'
		echo "port_up() { i=0; until curl -s 127.0.0.1:$port/metrics > /dev/null || [ \$i -gt 600 ]; do sleep 0.1; i=\$((i + 1)); done; }"
		sed -e 's#JOB=\$!; sleep 1#JOB=$!; job_up $JOB#' -e 's#& sleep 1#\& port_up#' "$T/readme/using.sh"
	} > "$T/readme/waits.sh" && mv "$T/readme/waits.sh" "$T/readme/using.sh"
	[ "$(grep -c 'JOB=\$!; job_up \$JOB\|& port_up' "$T/readme/using.sh")" = 2 ] ||
		bad "README's Using it: no 'sleep 1' where the job and the exporter start"
	(cd "$T/readme" && env -u NCCLBPF_LOG NCCLBPF_CTL_DIR="$T/readme/ctl" timeout 120 bash using.sh) \
		> "$T/readme/out" 2>&1
	rc=$?
	# The job prints what it did once the kill reaches it, after the shell is done.
	i=0
	while [ $i -lt 600 ] && ! grep -q "collectives per rank" "$T/readme/out"; do sleep 0.1; i=$((i + 1)); done
	grep -q "INFO" "$T/readme/out" && bad "README's Using it: INFO lines in the terminal"
	grep -q "loaded .*slo_enforcer.bpf.o.*active from call" "$T/readme/out" || bad "README's Using it: no reload"
	grep -q "^ncclbpf_tuner_calls_total" "$T/readme/out" || bad "README's Using it: no scrape"
	grep -q "collectives per rank, 0 on which ranks disagreed" "$T/readme/out" ||
		bad "README's Using it: the job did not end cleanly"
	[ $rc = 0 ] && ! grep -v "serving Prometheus" "$T/readme/out" | grep -q "^ncclbpf: " || bad "README's Using it: exit $rc, errors:"
	[ $fail = 0 ] && echo "ok: README's Using it runs as written" || cat "$T/readme/out"
else
	echo "SKIP: README's Using it (needs curl and bash)"
fi
exit $fail
