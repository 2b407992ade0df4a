#!/usr/bin/env bash
# Copy one network's bitstream, hardware handoff, manifest and the host package
# to a PYNQ board over ssh.
#
#   board/deploy.sh BOARD=<host> [NET=zynqnet-mini] [BOARD_USER=xilinx] [DEST=/home/xilinx/zynqflow]
#                   [EXPORT=build/<NET>/export] [BIT=bitstreams/<NET>_pynq-z2.bit] [DRY_RUN=1]
#
# (NAME=value arguments or environment variables.) On the board, DEST gets:
#   <NET>/manifest.json, <NET>_pynq-z2.bit, .hwh, regmap.json   what the driver needs
#   <NET>/integers.npz, vectors_in.bin, vectors_out.bin          golden model and test vectors (if exported)
#   lib/zynqflow/host/                                           the host package (driver, CLI)
#   lib/zynqflow/spec/                                           the torch-free core: numerics, topology,
#                                                                golden model, engine specification
#   zynqflow                                                     wrapper: runs the CLI as root with pynq
# DRY_RUN=1 stages and lists the files and prints the commands, without connecting;
# STAGE_DIR=<dir> stages into <dir> and keeps it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for arg in "$@"; do
    case "$arg" in
        BOARD=*|NET=*|BOARD_USER=*|DEST=*|EXPORT=*|BIT=*|DRY_RUN=*|SSH_OPTS=*|STAGE_DIR=*) export "${arg?}" ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "deploy.sh: unknown argument '$arg' (use NAME=value: BOARD, NET, BOARD_USER, DEST, EXPORT, BIT, DRY_RUN)" >&2; exit 2 ;;
    esac
done
NET="${NET:-zynqnet-mini}"
BOARD_USER="${BOARD_USER:-xilinx}"
DEST="${DEST:-/home/xilinx/zynqflow}"
EXPORT="${EXPORT:-$repo/build/$NET/export}"
BIT="${BIT:-$repo/bitstreams/${NET}_pynq-z2.bit}"
HWH="${BIT%.bit}.hwh"
SSH_OPTS="${SSH_OPTS:-}"
DRY_RUN="${DRY_RUN:-0}"

die() { echo "deploy.sh: $1" >&2; exit "${2:-2}"; }

[ -n "${BOARD:-}" ] || die "BOARD is not set: board/deploy.sh BOARD=<host or IP of the PYNQ board> [NET=$NET]"
missing=()
for f in "$BIT" "$HWH" "$EXPORT/manifest.json" "$repo/rtl/regmap.json"; do
    [ -f "$f" ] || missing+=("$f")
done
if [ "${#missing[@]}" -gt 0 ]; then
    hint=""
    case " ${missing[*]} " in *".bit "*|*".hwh "*) hint=" Build the bitstream first: board/bitstream.sh $NET (needs Vivado).";; esac
    case " ${missing[*]} " in *"manifest.json "*) hint="$hint Export the network: make export NET=$NET.";; esac
    die "missing: ${missing[*]}.$hint Nothing was copied."
fi
# the bitstream must belong to this export (the driver checks the register too)
if [ -f "${BIT%.bit}.json" ]; then
    want="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network_id"])' "$EXPORT/manifest.json")"
    have="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network_id"])' "${BIT%.bit}.json")"
    [ "$want" = "$have" ] || die "${BIT%.bit}.json says network ID $have, $EXPORT/manifest.json is $want: rebuild the bitstream or pick the matching export. Nothing was copied."
fi

if [ -n "${STAGE_DIR:-}" ]; then        # keep the staged tree (inspection, tests)
    stage="$STAGE_DIR"
    mkdir -p "$stage"
else
    stage="$(mktemp -d)"
    trap 'rm -rf "$stage"' EXIT
fi
mkdir -p "$stage/$NET" "$stage/lib/zynqflow/host" "$stage/lib/zynqflow/spec"
cp "$BIT" "$stage/$NET/${NET}_pynq-z2.bit"
cp "$HWH" "$stage/$NET/${NET}_pynq-z2.hwh"
cp "$EXPORT/manifest.json" "$repo/rtl/regmap.json" "$stage/$NET/"
for f in integers.npz vectors_in.bin vectors_out.bin; do
    [ -f "$EXPORT/$f" ] && cp "$EXPORT/$f" "$stage/$NET/"
done
cp "$repo"/host/*.py "$stage/lib/zynqflow/host/"
cp "$repo"/spec/*.py "$stage/lib/zynqflow/spec/"
cat > "$stage/zynqflow" <<EOF
#!/bin/sh
# zynqflow CLI on the board: classify | stream | benchmark | info (see --help)
D="\$(cd "\$(dirname "\$0")" && pwd)"
PY="\${PYNQ_PYTHON:-/usr/local/share/pynq-venv/bin/python3}"
[ -x "\$PY" ] || PY=python3
export PYTHONPATH="\$D/lib\${PYTHONPATH:+:\$PYTHONPATH}" ZYNQFLOW_EXPORT="\${ZYNQFLOW_EXPORT:-\$D/$NET}"
if [ "\$(id -u)" -ne 0 ]; then
    exec sudo -E env PYTHONPATH="\$PYTHONPATH" ZYNQFLOW_EXPORT="\$ZYNQFLOW_EXPORT" "\$PY" -m zynqflow.host.cli "\$@"
fi
exec "\$PY" -m zynqflow.host.cli "\$@"
EOF
chmod +x "$stage/zynqflow"

target="$BOARD_USER@$BOARD"
echo "deploy.sh: $NET -> $target:$DEST"
(cd "$stage" && find . -type f | sort | sed 's|^\./|  |')
if [ "$DRY_RUN" = "1" ]; then
    echo "deploy.sh: DRY_RUN=1: would run: tar -C <stage> -czf - . | ssh $SSH_OPTS $target 'mkdir -p $DEST && tar -C $DEST -xzf -'"
    exit 0
fi
command -v ssh >/dev/null 2>&1 || die "ssh not found"
# shellcheck disable=SC2086
tar -C "$stage" -czf - . | ssh $SSH_OPTS "$target" "mkdir -p '$DEST' && tar -C '$DEST' -xzf -" \
    || die "copy to $target:$DEST failed (is the board up, ssh enabled, user $BOARD_USER?)" 1
echo "deploy.sh: done. On the board:  $DEST/zynqflow info   then   $DEST/zynqflow benchmark --backend pynq,golden"
