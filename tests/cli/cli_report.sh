#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ncclbpf report against a live emulated job and against a saved export:
# both pages parse, carry an <svg> with the job's collectives, and name
# nothing external; bad input exits 2, a dead pid 1.  Usage: cli_report.sh NCCLBPF POLICY TMPDIR
BIN=$1 OBJ=$2 T=$3
rm -rf "$T" && mkdir -p "$T" || exit 1
fail() { echo "FAIL: $*"; [ -z "$P" ] || kill "$P" 2>/dev/null; exit 1; }

# The job lives until the live part is done (a loaded machine may take
# seconds to start it); the report waits until both collectives were seen.
"$BIN" sim --serve "$OBJ" --duration 600 >"$T/serve.log" 2>&1 &
P=$!
trap 'kill "$P" 2>/dev/null' EXIT
i=0
until "$BIN" export "$P" >"$T/seen.prom" 2>/dev/null &&
      grep -q 'collective="AllReduce"' "$T/seen.prom" && grep -q 'collective="AllGather"' "$T/seen.prom"; do
	i=$((i + 1)); [ $i -lt 600 ] || fail "the job showed no AllReduce and AllGather in 600 tries"
	sleep 0.1
done
"$BIN" report -o "$T/out.html" "$P" || fail "report of a live pid"
"$BIN" export --count 1 --textfile "$T/f.prom" "$P" || fail "export --textfile"
kill -TERM "$P"; wait "$P" || fail "the job did not end cleanly on SIGTERM"
# Ended: nothing below may signal its pid, which the kernel can give to another process.
trap - EXIT
DEAD=$P P=
"$BIN" report --from "$T/f.prom" -o "$T/out2.html" || fail "report --from"

for f in "$T/out.html" "$T/out2.html"; do
	python3 - "$f" <<'PY' || fail "$f is not a well-formed self-contained report"
import sys, re, xml.etree.ElementTree as ET
from html.parser import HTMLParser
doc = open(sys.argv[1]).read()
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.tags = []; s.ext = []
    def handle_starttag(s, t, a):
        s.tags.append(t)
        for k, v in a:
            if k in ("src", "href") or (v and re.match(r"\s*(https?:|//|url\()", v) and k != "xmlns"):
                s.ext.append((t, k, v))
p = P(); p.feed(doc); p.close()
assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags, p.tags
assert not p.ext, p.ext
assert "url(" not in doc and "@import" not in doc
svgs = re.findall(r"<svg.*?</svg>", doc, re.S)
assert len(svgs) == 3, len(svgs)
for s in svgs:
    ET.fromstring(s)
text = " ".join(svgs)
for coll in ("AllReduce", "AllGather"):
    assert coll in text, coll
assert re.search(r"<rect [^>]*width=\"[1-9]", svgs[0]), "no latency bar"
assert re.search(r"AllReduce [A-Z_]+/[A-Z0-9_]+", svgs[2]), "no algorithm/protocol row"
PY
done

if [ -x /usr/bin/chromium ]; then
	# One browser start does both (a start costs seconds on a loaded machine):
	# the screenshot, and the DOM as the browser parsed it.
	/usr/bin/chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
		--no-first-run --screenshot="$T/shot.png" --dump-dom --window-size=900,2000 \
		"file://$T/out.html" >"$T/dom.html" 2>/dev/null
	[ -s "$T/shot.png" ] || fail "chromium rendered no screenshot"
	# Drawn, not blank: a white page inflates to filter bytes and 0xff only.
	python3 - "$T/shot.png" <<'PY' || fail "chromium's screenshot of the report is blank"
import sys, zlib, struct
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n"
i, idat = 8, b""
while i < len(b):
    n, t = struct.unpack(">I4s", b[i:i + 8])
    if t == b"IDAT":
        idat += b[i + 8:i + 8 + n]
    i += 12 + n
assert len(set(zlib.decompress(idat))) > 16
PY
	# The browser's own DOM after parsing: the three plots survived as SVG.
	n=$(grep -o '<svg' "$T/dom.html" | wc -l)
	[ "$n" -eq 3 ] || fail "chromium's DOM holds $n svg elements, not 3"
	echo "chromium rendered the report ($(wc -c <"$T/shot.png") byte screenshot, $n plots)"
else
	echo "SKIP: /usr/bin/chromium absent, the page was not rendered"
fi

# Bad input: exit 2 with one line.
out=$("$BIN" report --from "$T/missing.prom" -o "$T/x.html" 2>&1); rc=$?
[ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "missing --from: rc $rc: $out"
out=$("$BIN" report -o "$T/x.html" "$DEAD" 2>&1); rc=$?
[ $rc -eq 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "dead pid: rc $rc: $out"
[ ! -e "$T/x.html" ] || fail "a failed report wrote a page"
echo "PASS cli_report"
