#!/usr/bin/env bash
# Copy one network's bitstream, hardware handoff, manifest and the host package
# to a PYNQ board over ssh, and install the `zynqflow` command.
#
#   board/deploy.sh BOARD=<host> [NET=zynqnet-mini] [BOARD_USER=xilinx] [DEST=/home/xilinx/zynqflow]
#                   [EXPORT=build/<NET>/export] [BIT=bitstreams/<NET>_pynq-z2.bit] [DRY_RUN=1]
#
# (NAME=value arguments or environment variables.) On the board, DEST gets (as BOARD_USER):
#   <NET>/manifest.json, weights.bin, <NET>_pynq-z2.bit, .hwh    what the driver needs (weights.bin: the
#                                                                weight image it loads into DDR)
#   <NET>/integers.npz, vectors_in.bin, vectors_out.bin          golden model and test vectors (if exported)
#   <NET>/<NET>_pynq-z2.json                                     the bitstream's timing record (if built here)
#   lib/zynqflow/host/, lib/zynqflow/spec/                       the host package and the torch-free core
#   zynqflow.json                                                {"export": "<NET>"}: the CLI's default export
#   install_root.sh, zynqflow.sudoers, zynqflow                  the root step (to read), what it installs
# and NOTEBOOKS (default /home/xilinx/jupyter_notebooks/zynqflow) the notebooks and zynqflow_paths.json.
# Then ONE root step: install_root.sh piped over `ssh -t` to `sudo sh -s` (sudo asks the password once,
# here, at deploy time; root never runs a script from DEST, which BOARD_USER can write). It copies
# what it installs out of DEST, checks each file against the hashes deploy.sh computed here, and installs:
#   /usr/local/lib/zynqflow/lib/                 the host package (what runs as root)
#   /usr/local/lib/zynqflow/export/<NET>/        the export and bitstream: the only ones the runner takes
#   /usr/local/lib/zynqflow/site/                the PYNQ venv's pynq (and numpy, pillow) with what they
#                                                require, each file checked against its RECORD
#   /usr/local/lib/zynqflow/bin/zynqflow-run     the runner: the system python isolated (-I -S) with an
#                                                environment of its own (XILINX_XRT=/usr), refusing to run
#                                                anything a user other than root can change
#   /etc/sudoers.d/zynqflow                      BOARD_USER may run exactly that runner as root without a
#                                                password; env_reset, nothing kept; no SETENV
#                                                (checked with visudo -c before it is installed)
#   /usr/local/bin/zynqflow                      the command: `sudo -n` on the runner (never prompts:
#                                                works over ssh without a terminal, from cron and systemd)
# all root-owned (board/README.md, "What the runner trusts"). DRY_RUN=1 stages and lists the files
# and prints the commands, without connecting; STAGE_DIR=<dir> stages into <dir> and keeps it.
# Redeploying replaces all of it; board/README.md says how to remove it.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for arg in "$@"; do
    case "$arg" in
        BOARD=*|NET=*|BOARD_USER=*|DEST=*|EXPORT=*|BIT=*|DRY_RUN=*|SSH_OPTS=*|STAGE_DIR=*|NOTEBOOKS=*|XRT=*) export "${arg?}" ;;
        -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
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
# a regular package: `zynqflow` and its modules come from this copy only, never merged (as a namespace
# package would be) with a `zynqflow/` directory elsewhere on sys.path
printf '"""zynqflow on the board: the host package and the engine specification (board/deploy.sh)."""\n' \
    > "$stage/lib/zynqflow/__init__.py"
# The runner, its Python environment, the deployed export and the sudoers drop-in are installed by
# the root step into root-owned paths (board/README.md, "What the runner trusts").
RUN_DIR=/usr/local/lib/zynqflow
RUNNER="$RUN_DIR/bin/zynqflow-run"
XRT="${XRT:-/usr}"                              # XILINX_XRT on the PYNQ v3.0.1 image
# the Jupyter notebooks (copied into NOTEBOOKS by BOARD_USER, below); they import the root-owned copy
NOTEBOOKS="${NOTEBOOKS:-/home/xilinx/jupyter_notebooks/zynqflow}"
mkdir -p "$stage/notebooks"
cp "$repo"/notebooks/*.ipynb "$stage/notebooks/"
printf '{"lib": "%s", "bitfile": "%s", "images": "images"}\n' "$RUN_DIR/lib" \
    "$RUN_DIR/export/$NET/${NET}_pynq-z2.bit" > "$stage/notebooks/zynqflow_paths.json"
printf '{"export": "%s"}\n' "$NET" > "$stage/zynqflow.json"
cat > "$stage/zynqflow.sudoers" <<EOF
# /etc/sudoers.d/zynqflow, written by zynqflow's board/deploy.sh: $BOARD_USER runs the zynqflow CLI as root
# (pynq needs root) without a password, so that it works over ssh without a terminal, from cron and
# from systemd units. Exactly one root-owned command; the environment is reset and nothing of the
# caller's is kept (the runner sets XILINX_XRT itself; the wrapper passes ZYNQFLOW_DEBUG as --debug).
Cmnd_Alias ZYNQFLOW = $RUNNER
Defaults!ZYNQFLOW env_reset, !setenv, !requiretty
$BOARD_USER ALL = (root) NOPASSWD: ZYNQFLOW
EOF
cat > "$stage/zynqflow" <<EOF
#!/bin/sh
# zynqflow CLI on the board: classify | stream | benchmark | doctor | info (see --help).
# Runs the root-owned runner as root through sudo -n (the sudoers drop-in of deploy.sh): no password,
# no terminal needed (ssh commands, cron, systemd); a clear error instead of a prompt otherwise.
# sudo keeps none of the caller's environment: ZYNQFLOW_DEBUG (not 0) goes along as --debug.
R=$RUNNER
case "\${ZYNQFLOW_DEBUG:-0}" in 0) ;; *) set -- --debug "\$@" ;; esac
if [ "\$(id -u)" -eq 0 ]; then exec "\$R" "\$@"; fi
exec sudo -n "\$R" "\$@"
EOF
chmod +x "$stage/zynqflow"
bad="$(find "$stage" ! -type f ! -type d)"
[ -z "$bad" ] || die "not a regular file, refusing to deploy it: $bad"
# What root installs, with the hashes of what was staged here: the root step copies each file out
# of DEST (which BOARD_USER can write) into a root-owned directory and checks it against this list
# before anything of it is used.
sums="$(cd "$stage" && find lib "$NET" zynqflow zynqflow.sudoers -type f | LC_ALL=C sort | xargs sha256sum)"
cat > "$stage/install_root.sh" <<EOF
#!/bin/sh
# zynqflow's root step, written by board/deploy.sh for $NET. deploy.sh pipes it to 'sudo sh -s' over
# ssh -t ($BOARD_USER@<board>); this copy in $DEST is for reading: it refuses to run as root from a
# directory a user other than root can change. It installs, root-owned:
#   $RUN_DIR/lib/           the host package (checked against the hashes below)
#   $RUN_DIR/export/$NET/   the deployed export and bitstream (the only ones the runner takes)
#   $RUN_DIR/site/          the PYNQ venv's pynq, numpy, pillow and what they require (RECORD-checked)
#   $RUN_DIR/bin/zynqflow-run   the runner: the system python, isolated, XILINX_XRT=$XRT
#   /etc/sudoers.d/zynqflow (visudo -c first), /usr/local/bin/zynqflow
# ZQ_ROOT=<dir> installs under <dir> instead of / (tests); PYNQ_PYTHON, PYNQ_VENV: the python that
# runs the runner (root's: the venv's bin/python3 is $BOARD_USER's on the v3.0.1 image) and the venv.
# sudo's env_reset drops all three.
set -eu
umask 022
ROOT="\${ZQ_ROOT:-}"
RUN="\$ROOT$RUN_DIR"
PY="\${PYNQ_PYTHON:-/usr/bin/python3}"
VENV="\${PYNQ_VENV:-/usr/local/share/pynq-venv}"
die() { echo "install_root.sh: \$*" >&2; exit 1; }
# The first of \$1 (as named, then resolved) and the directories above it that a user other than root
# could change (owner not root, or group/other-writable; a sticky directory, as /tmp, counts only for
# entries not root's; a symbolic link only by its owner); nothing when only root can.
others_can_write() {
    for p in "\$(realpath -s -- "\$1")" "\$(readlink -f -- "\$1")"; do
        child=""
        while :; do
            [ -e "\$p" ] || [ -L "\$p" ] || { echo "\$p (missing)"; return 0; }
            set -- \$(stat -c '%u %a %F' -- "\$p")
            if [ "\$1" != 0 ]; then echo "\$p (owned by uid \$1)"; return 0; fi
            if [ "\$3" != symbolic ] && [ \$(( 0\$2 & 022 )) != 0 ] \\
                    && ! { [ \$(( 0\$2 & 01000 )) != 0 ] && [ "\$child" = 0 ]; }; then
                echo "\$p (mode \$2)"; return 0
            fi
            [ "\$p" = / ] && break
            child="\$1"; p="\$(dirname -- "\$p")"
        done
    done
}
if [ "\$(id -u)" = 0 ] && [ "\$(basename -- "\$0")" = install_root.sh ]; then
    why="\$(others_can_write "\$0")"
    [ -z "\$why" ] || die "refusing to run as root from \$0: a user other than root can change it (\$why). Run make deploy (it pipes this script to sudo over ssh), or copy it to a root-owned place after reading it"
fi
why="\$(others_can_write "\$PY")"
[ -z "\$why" ] || die "the runner's python \$PY can be changed by a user other than root (\$why): set PYNQ_PYTHON to a root-owned python (the system's /usr/bin/python3)"
mkdir -p "\$ROOT/usr/local/lib" "\$ROOT/usr/local/bin" "\$ROOT/etc/sudoers.d"
T="\$(mktemp -d "\$ROOT/usr/local/lib/.zynqflow-install.XXXXXX")"
trap 'rm -rf "\$T"' EXIT
# 1. the payload: each file copied out of $DEST (as data), then checked against deploy.sh's hashes
cat > "\$T/SHA256SUMS" <<'SUMS'
$sums
SUMS
while read -r _ f; do
    mkdir -p "\$T/payload/\$(dirname -- "\$f")"
    cat -- "$DEST/\$f" > "\$T/payload/\$f" || die "$DEST/\$f: cannot be read"
done < "\$T/SHA256SUMS"
(cd "\$T/payload" && sha256sum -c --quiet --strict ../SHA256SUMS) \\
    || die "files in $DEST differ from what deploy.sh sent (changed on the board since?): run make deploy again"
# 2. the new tree, root-owned: host package, export, the venv's packages, the runner
mkdir -p "\$T/new/bin" "\$T/new/export" "\$T/new/pycache"
mv "\$T/payload/lib" "\$T/new/lib"
mv "\$T/payload/$NET" "\$T/new/export/$NET"
for site in "\$VENV"/lib/python3*/site-packages; do
    [ -d "\$site" ] || continue
    "\$PY" -I -S -B "\$T/new/lib/zynqflow/host/runner.py" --copy-env "\$site" "\$T/new/site" pynq numpy pillow
    break
done
cat > "\$T/new/bin/zynqflow-run" <<RUNNER
#!/bin/sh
# zynqflow-run (root-owned; the only command the sudoers drop-in allows): the system python in
# isolated mode (-I -S: no PYTHON* variables, no user site, no .pth file, not the current directory),
# an environment of its own (XILINX_XRT=$XRT whatever the caller's says), bytecode only from
# \$RUN/pycache, and zynqflow/host/runner.py's checks (board/README.md, "What the runner trusts").
exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \\\\
    XILINX_XRT=$XRT \\\${SUDO_UID:+"SUDO_UID=\\\$SUDO_UID"} \\\${SUDO_GID:+"SUDO_GID=\\\$SUDO_GID"} \\\\
    "\$PY" -I -S -X pycache_prefix="\$RUN/pycache" "\$RUN/lib/zynqflow/host/runner.py" \\\\
    --root "\$RUN" --export "\$RUN/export/$NET" -- "\\\$@"
RUNNER
chmod 0755 "\$T/new/bin/zynqflow-run"
[ -n "\$ROOT" ] || chown -R 0:0 "\$T/new"
chmod -R go-w "\$T/new"
# 3. in place: the old tree goes with T
if [ -e "\$RUN" ]; then mv "\$RUN" "\$T/old"; fi
mv "\$T/new" "\$RUN"
install -m 0755 "\$T/payload/zynqflow" "\$ROOT/usr/local/bin/zynqflow"
# 4. the drop-in: checked before it is installed (a broken sudoers file would lock sudo out)
visudo -c -q -f "\$T/payload/zynqflow.sudoers" || die "zynqflow.sudoers does not pass visudo -c; not installed"
install -m 0440 "\$T/payload/zynqflow.sudoers" "\$ROOT/etc/sudoers.d/zynqflow"
[ -n "\$ROOT" ] || chown 0:0 /etc/sudoers.d/zynqflow /usr/local/bin/zynqflow
"\$RUN/bin/zynqflow-run" info > /dev/null || die "the runner refuses to run (above): fix that, then make deploy again"
echo "zynqflow-installed: /usr/local/bin/zynqflow -> $RUNNER"
EOF
chmod +x "$stage/install_root.sh"

target="$BOARD_USER@$BOARD"
echo "deploy.sh: $NET -> $target:$DEST"
(cd "$stage" && find . -type f | sort | sed 's|^\./|  |')
root_cmd="printf '%s' '$(base64 < "$stage/install_root.sh" | tr -d '\n')' | base64 -d | sudo sh -s"
user_cmd="mkdir -p '$DEST' && tar -C '$DEST' -xzf - && mkdir -p \"\${ZQ_ROOT:-}$NOTEBOOKS\" && cp -r '$DEST/notebooks/.' \"\${ZQ_ROOT:-}$NOTEBOOKS/\""
if [ "$DRY_RUN" = "1" ]; then
    echo "deploy.sh: DRY_RUN=1: would run: tar -C <stage> -czf - . | ssh $SSH_OPTS $target \"mkdir -p $DEST && tar -C $DEST -xzf - && cp -r $DEST/notebooks/. $NOTEBOOKS/\""
    echo "deploy.sh: then (sudo asks the password of $BOARD_USER once): ssh -t $SSH_OPTS $target \"printf %s <install_root.sh, base64> | base64 -d | sudo sh -s\""
    exit 0
fi
command -v ssh >/dev/null 2>&1 || die "ssh not found"
# shellcheck disable=SC2086
tar -C "$stage" -czf - . | ssh $SSH_OPTS "$target" "$user_cmd" \
    || die "copy to $target:$DEST (and the notebooks to $NOTEBOOKS) failed (is the board up, ssh enabled, user $BOARD_USER?)" 1
echo "deploy.sh: installing the command as root on $BOARD (sudo asks for $BOARD_USER's password once)"
# the root step goes over ssh itself: root never reads a script from DEST, which $BOARD_USER can write
# shellcheck disable=SC2086
ssh -t $SSH_OPTS "$target" "$root_cmd" \
    || die "the root step failed (above). sudo needs a terminal for the password: run make deploy from one (it installs $RUNNER, /etc/sudoers.d/zynqflow and /usr/local/bin/zynqflow; see board/README.md)" 1
echo "deploy.sh: done. On the board (or: ssh $target zynqflow doctor):  zynqflow doctor   then   zynqflow benchmark --backend pynq,golden"
