#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Every panel query of dashboards/ncclbpf.json must parse as PromQL: each
# becomes a recording rule (Grafana's $__rate_interval and $size replaced
# by values) and promtool check rules parses them.  That they return data
# from a live exporter is dashboard_live.sh's part.
set -e
DASH="$1"
command -v promtool >/dev/null || { echo "SKIP: promtool not installed"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=$(jq '[.panels[].targets[]] | length' "$DASH")
[ "$n" -ge 10 ] || { echo "FAIL: only $n panel queries"; exit 1; }
{
	echo "groups:"
	echo "  - name: dashboard"
	echo "    rules:"
	jq -r '.panels[].targets[].expr' "$DASH" | sed -e 's/\$__rate_interval/5m/g' -e 's/\$size/.*/g' |
	awk '{ printf "      - record: dashboard:panel_%d\n        expr: %c%s%c\n", NR, 39, $0, 39 }'
} > "$TMP/rules.yml"
promtool check rules "$TMP/rules.yml"
echo "PASS: $n panel queries parse"
