#!/usr/bin/env bash
# Copy one network's bitstream, hardware handoff, manifest and the host package
# to a PYNQ board over ssh.
#
#   board/deploy.sh BOARD=<host> [NET=zynqnet-mini] [BOARD_USER=xilinx] [DEST=/home/xilinx/zynqflow]
#                   [EXPORT=build/<NET>/export] [BIT=bitstreams/<NET>_pynq-z2.bit] [DRY_RUN=1]
#
# (NAME=value arguments or environment variables.) On the board, DEST gets:
#   <NET>/manifest.json, weights.bin, <NET>_pynq-z2.bit, .hwh    what the driver needs (weights.bin: the
#                                                                weight image it loads into DDR)
#   <NET>/integers.npz, vectors_in.bin, vectors_out.bin          golden model and test vectors (if exported)
#   lib/zynqflow/host/                                           the host package (driver, CLI)
#   lib/zynqflow/spec/                                           the torch-free core: numerics, topology,
#                                                                golden model, engine specification (the
#                                                                register map the driver uses)
#   zynqflow                                                     wrapper: runs the CLI as root with pynq
#                                                                (XILINX_XRT=/usr unless set; works over ssh,
#                                                                from cron and systemd, and through a link)
#   zynqflow.json                                                {"export": "<NET>"}: the CLI's default export
#   <NET>/<NET>_pynq-z2.json                                     the bitstream's timing record (if built here):
#                                                                the driver refuses a clock above what it met
# and NOTEBOOKS (default /home/xilinx/jupyter_notebooks/zynqflow, the image's Jupyter folder) gets
# notebooks/*.ipynb and zynqflow_paths.json (where DEST's package and bitstream are);
# and links /usr/local/bin/zynqflow -> DEST/zynqflow (passwordless sudo), else ~/.local/bin/zynqflow
# (then add ~/.local/bin to PATH: the script prints the line), so that `zynqflow` is a command.
# DRY_RUN=1 stages and lists the files and prints the commands, without connecting;
# STAGE_DIR=<dir> stages into <dir> and keeps it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for arg in "$@"; do
    case "$arg" in
        BOARD=*|NET=*|BOARD_USER=*|DEST=*|EXPORT=*|BIT=*|DRY_RUN=*|SSH_OPTS=*|STAGE_DIR=*|NOTEBOOKS=*) export "${arg?}" ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
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
nb_cmd="{ mkdir -p '$NOTEBOOKS' && cp -r '$DEST/notebooks/.' '$NOTEBOOKS/' \
|| sudo -n sh -c \"mkdir -p '$NOTEBOOKS' && cp -r '$DEST/notebooks/.' '$NOTEBOOKS/'\"; } 2>/dev/null \
&& echo 'zynqflow-notebooks: $NOTEBOOKS'"
printf '{"export": "%s"}\n' "$NET" > "$stage/zynqflow.json"
cat > "$stage/zynqflow" <<EOF
#!/bin/sh
# zynqflow CLI on the board: classify | stream | benchmark | info (see --help)
# Also through a link (/usr/local/bin/zynqflow), over ssh, from cron and systemd.
D="\$(cd "\$(dirname "\$(readlink -f "\$0" 2>/dev/null || echo "\$0")")" && pwd)"
PY="\${PYNQ_PYTHON:-/usr/local/share/pynq-venv/bin/python3}"
[ -x "\$PY" ] || PY=python3
# pynq registers the Zynq device only when XILINX_XRT is set: the PYNQ image sets it for
# login shells only (/etc/profile.d), not for ssh commands, cron or systemd
export XILINX_XRT="\${XILINX_XRT:-/usr}"
export PYTHONPATH="\$D/lib\${PYTHONPATH:+:\$PYTHONPATH}" ZYNQFLOW_EXPORT="\${ZYNQFLOW_EXPORT:-\$D/$NET}"
if [ "\$(id -u)" -ne 0 ]; then
    exec sudo -E env PYTHONPATH="\$PYTHONPATH" ZYNQFLOW_EXPORT="\$ZYNQFLOW_EXPORT" XILINX_XRT="\$XILINX_XRT" \\
        "\$PY" -m zynqflow.host.cli "\$@"
fi
exec "\$PY" -m zynqflow.host.cli "\$@"
EOF
chmod +x "$stage/zynqflow"
# on the board, after the copy: `zynqflow` on PATH (/usr/local/bin with passwordless sudo, else ~/.local/bin)
link_cmd="if sudo -n ln -sfn '$DEST/zynqflow' /usr/local/bin/zynqflow 2>/dev/null; then echo 'zynqflow-link: /usr/local/bin/zynqflow'; \
else mkdir -p \"\$HOME/.local/bin\" && ln -sfn '$DEST/zynqflow' \"\$HOME/.local/bin/zynqflow\" \
&& echo \"zynqflow-link: \$HOME/.local/bin/zynqflow\"; fi"

target="$BOARD_USER@$BOARD"
echo "deploy.sh: $NET -> $target:$DEST"
(cd "$stage" && find . -type f | sort | sed 's|^\./|  |')
if [ "$DRY_RUN" = "1" ]; then
    echo "deploy.sh: DRY_RUN=1: would run: tar -C <stage> -czf - . | ssh $SSH_OPTS $target 'mkdir -p $DEST && tar -C $DEST -xzf - && <notebooks> && <link>'"
    echo "deploy.sh: <notebooks>: $nb_cmd"
    echo "deploy.sh: <link>: $link_cmd"
    exit 0
fi
command -v ssh >/dev/null 2>&1 || die "ssh not found"
# shellcheck disable=SC2086
copied="$(tar -C "$stage" -czf - . | ssh $SSH_OPTS "$target" "mkdir -p '$DEST' && tar -C '$DEST' -xzf - && { $nb_cmd; true; } && { $link_cmd; true; }")" \
    || die "copy to $target:$DEST failed (is the board up, ssh enabled, user $BOARD_USER?)" 1
link="$(printf '%s\n' "$copied" | sed -n 's/^zynqflow-link: //p' | tail -n 1)"
if printf '%s\n' "$copied" | grep -q '^zynqflow-notebooks: '; then
    echo "deploy.sh: notebooks in $NOTEBOOKS (Jupyter on the board: zynqflow/zynqflow_pynq_z2.ipynb)"
else
    echo "deploy.sh: the notebooks could not be copied to $NOTEBOOKS (they are in $DEST/notebooks)"
fi
case "$link" in
    /usr/local/bin/zynqflow)
        echo "deploy.sh: done; $link -> $DEST/zynqflow. On the board:  zynqflow info   then   zynqflow benchmark --backend pynq,golden" ;;
    "")
        echo "deploy.sh: done, but no link to $DEST/zynqflow was made. On the board:  $DEST/zynqflow info" ;;
    *)
        echo "deploy.sh: done; no passwordless sudo on the board, so the link is $link. Put it on PATH there:"
        echo "    echo 'export PATH=\"\$HOME/.local/bin:\$PATH\"' >> ~/.bashrc        (or: sudo ln -s $DEST/zynqflow /usr/local/bin/zynqflow)"
        echo "deploy.sh: then on the board:  zynqflow info   (until then: $DEST/zynqflow info)" ;;
esac
