#!/usr/bin/env bash
# Copy one network's bitstream, hardware handoff, manifest and the host package
# to a PYNQ board over ssh, and install the `zynqflow` command.
#
#   board/deploy.sh BOARD=<host> [NET=zynqnet-mini] [BOARD_USER=xilinx] [DEST=/home/xilinx/zynqflow]
#                   [EXPORT=build/<NET>/export] [BIT=bitstreams/<NET>_pynq-z2.bit] [DRY_RUN=1]
#
# (NAME=value arguments or environment variables.) On the board, DEST gets:
#   <NET>/manifest.json, weights.bin, <NET>_pynq-z2.bit, .hwh    what the driver needs (weights.bin: the
#                                                                weight image it loads into DDR)
#   <NET>/integers.npz, vectors_in.bin, vectors_out.bin          golden model and test vectors (if exported)
#   <NET>/<NET>_pynq-z2.json                                     the bitstream's timing record (if built here)
#   lib/zynqflow/host/, lib/zynqflow/spec/                       the host package and the torch-free core
#   zynqflow.json                                                {"export": "<NET>"}: the CLI's default export
#   install_root.sh, zynqflow.sudoers                            what the root step below installs
# Then ONE root step, over `ssh -t` (sudo asks the password once, here, at deploy time):
#   /usr/local/lib/zynqflow/lib/                 a root-owned copy of the host package (what runs as root)
#   /usr/local/lib/zynqflow/bin/zynqflow-run     root-owned runner: the PYNQ venv's python in isolated
#                                                mode (-I) on that copy, XILINX_XRT=/usr unless set, the
#                                                export DEST/<NET> unless --export is given
#   /etc/sudoers.d/zynqflow                      BOARD_USER may run exactly that runner as root without a
#                                                password; env_reset keeping XILINX_XRT only; no SETENV
#                                                (checked with visudo -c before it is installed)
#   /usr/local/bin/zynqflow                      the command: `sudo -n` on the runner (never prompts:
#                                                works over ssh without a terminal, from cron and systemd)
#   NOTEBOOKS (default /home/xilinx/jupyter_notebooks/zynqflow)   notebooks/*.ipynb, zynqflow_paths.json
# DRY_RUN=1 stages and lists the files and prints the commands, without connecting;
# STAGE_DIR=<dir> stages into <dir> and keeps it. Redeploying replaces all of it; board/README.md
# says how to remove it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for arg in "$@"; do
    case "$arg" in
        BOARD=*|NET=*|BOARD_USER=*|DEST=*|EXPORT=*|BIT=*|DRY_RUN=*|SSH_OPTS=*|STAGE_DIR=*|NOTEBOOKS=*) export "${arg?}" ;;
        -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
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
for f in "$BIT" "$HWH" "$EXPORT/manifest.json" "$EXPORT/weights.bin" "$repo/spec/engine.py"; do
    [ -f "$f" ] || missing+=("$f")
done
if [ "${#missing[@]}" -gt 0 ]; then
    hint=""
    case " ${missing[*]} " in *".bit "*|*".hwh "*) hint=" Build the bitstream first: board/bitstream.sh $NET (needs Vivado).";; esac
    case " ${missing[*]} " in *"manifest.json "*|*"weights.bin "*) hint="$hint Export the network: make export NET=$NET.";; esac
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
[ -f "${BIT%.bit}.json" ] && cp "${BIT%.bit}.json" "$stage/$NET/${NET}_pynq-z2.json"
cp "$EXPORT/manifest.json" "$EXPORT/weights.bin" "$stage/$NET/"
for f in integers.npz vectors_in.bin vectors_out.bin; do
    [ -f "$EXPORT/$f" ] && cp "$EXPORT/$f" "$stage/$NET/"
done
cp "$repo"/host/*.py "$stage/lib/zynqflow/host/"
cp "$repo"/spec/*.py "$stage/lib/zynqflow/spec/"
# the Jupyter notebooks (installed into NOTEBOOKS on the board, below), and where they find DEST
NOTEBOOKS="${NOTEBOOKS:-/home/xilinx/jupyter_notebooks/zynqflow}"
mkdir -p "$stage/notebooks"
cp "$repo"/notebooks/*.ipynb "$stage/notebooks/"
printf '{"lib": "%s", "bitfile": "%s", "images": "images"}\n' "$DEST/lib" "$DEST/$NET/${NET}_pynq-z2.bit" \
    > "$stage/notebooks/zynqflow_paths.json"
printf '{"export": "%s"}\n' "$NET" > "$stage/zynqflow.json"
# The runner, the sudoers drop-in and the command are installed by install_root.sh, as root, into
# root-owned paths: nothing that runs as root can be changed by BOARD_USER.
RUN_DIR=/usr/local/lib/zynqflow
RUNNER="$RUN_DIR/bin/zynqflow-run"
cat > "$stage/zynqflow.sudoers" <<EOF
# /etc/sudoers.d/zynqflow, written by zynqflow's board/deploy.sh: $BOARD_USER runs the zynqflow CLI as root
# (pynq needs root) without a password, so that it works over ssh without a terminal, from cron and
# from systemd units. Exactly one root-owned command; the environment is reset except XILINX_XRT.
Cmnd_Alias ZYNQFLOW = $RUNNER
Defaults!ZYNQFLOW env_reset, env_keep = "XILINX_XRT", !setenv, !requiretty
$BOARD_USER ALL = (root) NOPASSWD: ZYNQFLOW
EOF
cat > "$stage/zynqflow" <<EOF
#!/bin/sh
# zynqflow CLI on the board: classify | stream | benchmark | doctor | info (see --help).
# Runs the root-owned runner as root through sudo -n (the sudoers drop-in of deploy.sh): no password,
# no terminal needed (ssh commands, cron, systemd); a clear error instead of a prompt otherwise.
R=$RUNNER
if [ "\$(id -u)" -eq 0 ]; then exec "\$R" "\$@"; fi
exec sudo -n "\$R" "\$@"
EOF
chmod +x "$stage/zynqflow"
cat > "$stage/install_root.sh" <<EOF
#!/bin/sh
# Run as root on the board (deploy.sh: ssh -t $BOARD_USER@<board> sudo sh $DEST/install_root.sh).
# ZQ_ROOT=<dir> installs under <dir> instead of / (tests); PYNQ_PYTHON: the python to run
# (default the PYNQ venv's).
set -eu
ROOT="\${ZQ_ROOT:-}"
PY="\${PYNQ_PYTHON:-/usr/local/share/pynq-venv/bin/python3}"
[ -x "\$PY" ] || PY=/usr/bin/python3
umask 022
mkdir -p "\$ROOT$RUN_DIR/bin" "\$ROOT/etc/sudoers.d" "\$ROOT/usr/local/bin"
rm -rf "\$ROOT$RUN_DIR/lib"
cp -r "$DEST/lib" "\$ROOT$RUN_DIR/lib"
cat > "\$ROOT$RUNNER" <<RUNNER
#!/bin/sh
# zynqflow-run (root-owned; the only command the sudoers drop-in allows). Python in isolated mode:
# no PYTHON* variables, no user site, no current directory on sys.path.
L="\\\$(cd "\\\$(dirname "\\\$0")/.." && pwd)/lib"
export XILINX_XRT="\\\${XILINX_XRT:-/usr}" ZYNQFLOW_EXPORT="$DEST/$NET" HOME=/root ZQ_LIB="\\\$L"
exec "\$PY" -I -c 'import os, sys; sys.path.insert(0, os.environ["ZQ_LIB"]); from zynqflow.host.cli import main; sys.exit(main())' "\\\$@"
RUNNER
cp "$DEST/zynqflow" "\$ROOT/usr/local/bin/zynqflow"
chmod 0755 "\$ROOT$RUNNER" "\$ROOT/usr/local/bin/zynqflow"
if [ -z "\$ROOT" ]; then
    chown -R root:root "$RUN_DIR" /usr/local/bin/zynqflow
    chmod -R go-w "$RUN_DIR"
fi
# the drop-in: checked before it is installed (a broken sudoers file would lock sudo out)
visudo -c -q -f "$DEST/zynqflow.sudoers" || { echo "install_root.sh: $DEST/zynqflow.sudoers does not pass visudo -c; not installed" >&2; exit 1; }
install -m 0440 "$DEST/zynqflow.sudoers" "\$ROOT/etc/sudoers.d/zynqflow"
[ -n "\$ROOT" ] || chown root:root /etc/sudoers.d/zynqflow
if [ -d "$DEST/notebooks" ]; then
    mkdir -p "\$ROOT$NOTEBOOKS" && cp -r "$DEST/notebooks/." "\$ROOT$NOTEBOOKS/"
    [ -n "\$ROOT" ] || chown -R "$BOARD_USER" "$NOTEBOOKS" 2>/dev/null || true
    echo "zynqflow-notebooks: $NOTEBOOKS"
fi
echo "zynqflow-installed: /usr/local/bin/zynqflow -> $RUNNER"
EOF
chmod +x "$stage/install_root.sh"

target="$BOARD_USER@$BOARD"
echo "deploy.sh: $NET -> $target:$DEST"
(cd "$stage" && find . -type f | sort | sed 's|^\./|  |')
root_cmd="sudo sh '$DEST/install_root.sh'"
if [ "$DRY_RUN" = "1" ]; then
    echo "deploy.sh: DRY_RUN=1: would run: tar -C <stage> -czf - . | ssh $SSH_OPTS $target 'mkdir -p $DEST && tar -C $DEST -xzf -'"
    echo "deploy.sh: then (sudo asks the password of $BOARD_USER once): ssh -t $SSH_OPTS $target \"$root_cmd\""
    exit 0
fi
command -v ssh >/dev/null 2>&1 || die "ssh not found"
# shellcheck disable=SC2086
tar -C "$stage" -czf - . | ssh $SSH_OPTS "$target" "mkdir -p '$DEST' && tar -C '$DEST' -xzf -" \
    || die "copy to $target:$DEST failed (is the board up, ssh enabled, user $BOARD_USER?)" 1
echo "deploy.sh: installing the command as root on $BOARD (sudo asks for $BOARD_USER's password once)"
# shellcheck disable=SC2086
ssh -t $SSH_OPTS "$target" "$root_cmd" \
    || die "the root step failed: on the board, run  sudo sh $DEST/install_root.sh  (it installs $RUNNER, /etc/sudoers.d/zynqflow and /usr/local/bin/zynqflow; see board/README.md)" 1
echo "deploy.sh: done. On the board (or: ssh $target zynqflow doctor):  zynqflow doctor   then   zynqflow benchmark --backend pynq,golden"
