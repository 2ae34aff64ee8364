#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every quoted #include under src/ must reach only its own layer or one the
# layer may use (docs/architecture.md).  Includes resolve as the compiler
# sees them: the including file's folder, then src/, then src/runtime/.
# Folders not named below are not checked (say so in the table when one
# becomes a layer).
set -e
root=${1:-$(dirname "$0")/../..}
cd "$root"

allowed() { # layer -> the layers it may include
	case $1 in
	runtime)   echo "runtime" ;;
	telemetry) echo "telemetry" ;;
	host)      echo "host runtime telemetry" ;;
	control)   echo "control host runtime telemetry" ;;
	net)       echo "net runtime" ;;
	nccl)      echo "nccl net control host runtime telemetry" ;;
	observe)   echo "observe runtime" ;;
	loop)      echo "loop control host runtime telemetry" ;;
	emulator)  echo "emulator nccl" ;;
	tune)      echo "tune emulator control host runtime telemetry nccl" ;;
	cli)       echo "cli tune loop observe emulator control host runtime telemetry nccl" ;;
	*)         echo "-" ;;
	esac
}

bad=0
checked=0
for f in $(find src -name '*.[ch]' | sort); do
	dir=$(dirname "$f")
	layer=$(echo "$f" | cut -d/ -f2)
	ok=$(allowed "$layer")
	[ "$ok" = "-" ] && continue
	for inc in $(sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
		if [ -e "$dir/$inc" ]; then
			tgt=$(realpath --relative-to=. "$dir/$inc")
		elif [ -e "src/$inc" ]; then
			tgt="src/$inc"
		elif [ -e "src/runtime/$inc" ]; then
			tgt="src/runtime/$inc"
		else
			continue # include/ncclbpf/ (public) or a system header
		fi
		checked=$((checked + 1))
		to=$(echo "$tgt" | cut -d/ -f2)
		[ "$(allowed "$to")" = "-" ] && continue
		case " $ok " in
		*" $to "*) ;;
		*) echo "$f: includes $inc ($tgt): $layer may not use $to"; bad=$((bad + 1)) ;;
		esac
		# The emulator stands for NCCL: of src/nccl it sees only the ABI declarations.
		if [ "$layer" = emulator ] && [ "$to" = nccl ]; then
			case $tgt in
			src/nccl/abi_*.h) ;;
			*) echo "$f: includes $tgt: the emulator sees only nccl/abi_*.h"; bad=$((bad + 1)) ;;
			esac
		fi
	done
done
echo "layers: $checked includes checked, $bad upward or sideways"
[ "$bad" = 0 ]
