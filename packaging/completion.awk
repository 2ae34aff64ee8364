# SPDX-License-Identifier: Apache-2.0
# Reads OBJECT<TAB>SYNOPSIS<TAB>SUMMARY rows (gen-completion.sh) and prints
# the bash tables the completion reads, keyed by "OBJECT VERB":
#   _ncclbpf_verbs[OBJECT]          the object's verbs
#   _ncclbpf_opts[ROW]              options of the synopsis and the summary
#   _ncclbpf_valopts[ROW]           those that take a value: a placeholder
#                                   follows them (--sizes MIN:MAX), not a
#                                   bracket (--serve [OBJ]) or an option
#   _ncclbpf_words[ROW]             keywords of the synopsis (key, value, id)
#   _ncclbpf_values[ROW WORD]       what a synopsis lists after an option or
#                                   keyword (--engine interp|jit, flags any|...)
function add(tab, key, w) {
	if ((tab, key, w) in seen)
		return
	seen[tab, key, w] = 1
	list[tab, key] = list[tab, key] " " w
	keys[tab SUBSEP key] = 1
}
function clean(t) { gsub(/[][(),.;:]+$/, "", t); gsub(/^[[(]+/, "", t); return t }
function takes_value(nx) { return nx != "" && nx !~ /^[-[(|]/ }
BEGIN { FS = "\t" }
{
	obj = $1
	n = split($2, tok, /[ \t]+/)
	verb = tok[2] ~ /^[a-z][a-z0-9-]*$/ ? tok[2] : ""
	if (verb != "")
		add("verbs", obj, verb)
	row = obj " " verb
	prev = ""
	for (i = 2; i <= n; i++) {
		t = clean(tok[i])
		if (t == obj || t == verb || t == "" || t == "|") {
			prev = ""
			continue
		}
		m = split(t, alt, /\|/)
		# After an option or keyword, a|b|C: its lowercase values (auto, runq-p99=).
		if (m > 1 && prev != "") {
			for (j = 1; j <= m; j++)
				if (alt[j] ~ /^[a-z][a-z0-9-]*(=|$)/) {
					sub(/=.*/, "=", alt[j])
					add("values", row " " prev, alt[j])
				}
			prev = ""
			continue
		}
		prev = ""
		for (j = 1; j <= m; j++) {
			w = alt[j]
			sub(/=.*/, "", w)
			if (w ~ /^--?[a-z][a-z0-9-]*$/) {
				add("opts", row, w)
				if (j == m && takes_value(tok[i + 1]))
					add("valopts", row, w)
				prev = w
			} else if (w ~ /^[a-z][a-z0-9-]*$/) {
				add("words", row, w)
				# A keyword among placeholders (PID|all) takes no values.
				if (m == 1)
					prev = w
			}
		}
	}
	# Options the summary names (reload's --exe NAME), never its prose.
	k = split($3, sum, /[ \t]+/)
	for (i = 1; i <= k; i++) {
		w = clean(sum[i])
		if (w !~ /^--[a-z][a-z0-9-]*$/)
			continue
		add("opts", row, w)
		if (takes_value(sum[i + 1]) && sum[i] !~ /[,;)]$/ && sum[i + 1] ~ /^[A-Z]/)
			add("valopts", row, w)
	}
}
END {
	for (k in keys) {
		split(k, p, SUBSEP)
		printf "_ncclbpf_%s[\"%s\"]=\"%s\"\n", p[1], p[2], substr(list[p[1], p[2]], 2)
	}
}
