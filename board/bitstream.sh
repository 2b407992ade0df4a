#!/usr/bin/env bash
# Build the PYNQ-Z2 bitstream for one exported network and copy it to bitstreams/.
#
#   board/bitstream.sh [NET]                  (default NET=zynqnet-mini, or $NET)
#
# Needs: Vivado (2023.2 or later, Zynq-7000 device support) on PATH, the export
# (build/<NET>/export, `make export`) and the Vitis HLS IP of zq_top built from it
# (build/<NET>/hls/**/impl/ip/component.xml, `make hls`).
# Writes: build/<NET>/vivado/ (project, reports, timing.txt) and
#         bitstreams/<NET>_pynq-z2.bit, .hwh, and .json (what it was built from).
# Environment: EXPORT, HLS_DIR, OUT (directories above), JOBS (Vivado jobs, default 2).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NET="${1:-${NET:-zynqnet-mini}}"
EXPORT="${EXPORT:-$repo/build/$NET/export}"
HLS_DIR="${HLS_DIR:-$repo/build/$NET/hls}"
OUT="${OUT:-$repo/build/$NET/vivado}"
JOBS="${JOBS:-2}"

die() { echo "bitstream.sh: $1" >&2; exit "${2:-2}"; }

if ! command -v vivado >/dev/null 2>&1; then
    die "vivado not found on PATH: install Vivado 2023.2+ with Zynq-7000 support and source its settings64.sh. No bitstream was built (bitstreams/ stays without one)." 1
fi
[ -f "$EXPORT/manifest.json" ] || die "$EXPORT/manifest.json missing: export the network first (make export NET=$NET)"
ip_xml="$(find "$HLS_DIR" -path '*impl/ip/component.xml' 2>/dev/null | sort | tail -n 1 || true)"
[ -n "$ip_xml" ] || die "no Vitis HLS IP under $HLS_DIR (expected **/impl/ip/component.xml): run make hls NET=$NET (vitis_hls, step export)"
ip_repo="$(dirname "$ip_xml")"
# the IP must have been synthesized from this export: its net_params.h is the one the HLS flow included
if [ -f "$EXPORT/net_params.h" ] && [ "$ip_xml" -ot "$EXPORT/net_params.h" ]; then
    die "$ip_xml is older than $EXPORT/net_params.h: the HLS IP is stale, re-run make hls NET=$NET"
fi

mkdir -p "$OUT" "$repo/bitstreams"
echo "bitstream.sh: $NET, IP $ip_repo -> $OUT"
( cd "$OUT" && vivado -mode batch -nojournal -log "$OUT/vivado.log" \
      -source "$repo/board/pynq_z2.tcl" -tclargs "$ip_repo" "$OUT" "$NET" "$JOBS" ) \
    || die "Vivado failed (log: $OUT/vivado.log)" 1

for ext in bit hwh; do
    [ -f "$OUT/${NET}_pynq-z2.$ext" ] || die "Vivado did not write $OUT/${NET}_pynq-z2.$ext (log: $OUT/vivado.log)" 1
    cp "$OUT/${NET}_pynq-z2.$ext" "$repo/bitstreams/${NET}_pynq-z2.$ext"
done
net_id="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network_id"])' "$EXPORT/manifest.json")"
wns="$(awk '/^wns_ns/ {print $2}' "$OUT/timing.txt" 2>/dev/null || echo unknown)"
cat > "$repo/bitstreams/${NET}_pynq-z2.json" <<EOF
{
  "network": "$NET",
  "network_id": "$net_id",
  "manifest": "$EXPORT/manifest.json",
  "hls_ip": "$ip_repo",
  "vivado": "$(vivado -version 2>/dev/null | head -n 1)",
  "fclk0_mhz": 100,
  "wns_ns": "$wns",
  "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
EOF
echo "bitstream.sh: bitstreams/${NET}_pynq-z2.bit, .hwh, .json (network ID $net_id, WNS $wns ns)"
echo "bitstream.sh: next: board/deploy.sh BOARD=<pynq host> NET=$NET"
