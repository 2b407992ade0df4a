#!/usr/bin/env bash
# Build the PYNQ-Z2 bitstream for one exported network and copy it to bitstreams/.
#
#   board/bitstream.sh [NET]                  (default NET=zynqnet-mini, or $NET)
#   ENGINE=rtl|hls board/bitstream.sh [NET]   (make bitstream ENGINE=...)
#
# ENGINE: the engine on the board (board/README.md, "Which engine"):
#   rtl (default)  the RTL twin (rtl/), the engine CI simulates cycle by cycle: packaged as a
#                  Vivado IP from rtl/ and the export's rtl_params.svh (board/ip/package_rtl_ip.tcl
#                  -> build/<NET>/rtl_ip); needs Vivado only;
#   hls            the Vitis HLS export of hls/ (build/<NET>/hls/**/impl/ip/component.xml, `make hls`).
# Both go into the same block design (board/pynq_z2.tcl).
# Needs: Vivado (2023.2 or later, Zynq-7000 device support) on PATH, the export
# (build/<NET>/export, `make export`).
# Writes: build/<NET>/vivado/ (project, timing_summary.rpt, utilization.rpt, timing.txt,
#         utilization.txt) and, only when timing is met (worst setup and hold slack >= 0),
#         bitstreams/<NET>_pynq-z2.bit, .hwh, and .json (what it was built from, the engine, slack,
#         utilization). Prints the timing and utilization summary. Negative slack: exit 1 naming the
#         slack, nothing copied to bitstreams/.
# Environment: EXPORT, HLS_DIR, RTL_IP_DIR, OUT (directories above), BITSTREAMS (default bitstreams/),
#              JOBS (Vivado jobs, default 2), ENGINE.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NET="${1:-${NET:-zynqnet-mini}}"
ENGINE="${ENGINE:-rtl}"
EXPORT="${EXPORT:-$repo/build/$NET/export}"
HLS_DIR="${HLS_DIR:-$repo/build/$NET/hls}"
RTL_IP_DIR="${RTL_IP_DIR:-$repo/build/$NET/rtl_ip}"
OUT="${OUT:-$repo/build/$NET/vivado}"
BITSTREAMS="${BITSTREAMS:-$repo/bitstreams}"
JOBS="${JOBS:-2}"

die() { echo "bitstream.sh: $1" >&2; exit "${2:-2}"; }

case "$ENGINE" in
    rtl|hls) ;;
    *) die "ENGINE=$ENGINE: rtl (the RTL twin, the default) or hls (the Vitis HLS engine)";;
esac
if ! command -v vivado >/dev/null 2>&1; then
    if [ "$ENGINE" = rtl ]; then need="ENGINE=rtl needs Vivado only"; else need="ENGINE=hls also needs the IP from make hls (Vitis HLS)"; fi
    die "vivado not found on PATH: install Vivado 2023.2+ with Zynq-7000 support and source its settings64.sh ($need). No bitstream was built (bitstreams/ stays without one). Without Vivado, make rtl-sim and make rtl-bench run the RTL twin in simulation." 1
fi
[ -f "$EXPORT/manifest.json" ] || die "$EXPORT/manifest.json missing: export the network first (make export NET=$NET)"
if [ "$ENGINE" = hls ]; then
    ip_xml="$(find "$HLS_DIR" -path '*impl/ip/component.xml' 2>/dev/null | sort | tail -n 1 || true)"
    [ -n "$ip_xml" ] || die "no Vitis HLS IP under $HLS_DIR (expected **/impl/ip/component.xml): run make hls NET=$NET (vitis_hls, step export), or build the RTL twin: ENGINE=rtl"
    ip_repo="$(dirname "$ip_xml")"
    # the IP must have been synthesized from this export: its net_params.h is the one the HLS flow included
    if [ -f "$EXPORT/net_params.h" ] && [ "$ip_xml" -ot "$EXPORT/net_params.h" ]; then
        die "$ip_xml is older than $EXPORT/net_params.h: the HLS IP is stale, re-run make hls NET=$NET"
    fi
else
    [ -f "$EXPORT/rtl_params.svh" ] || die "$EXPORT/rtl_params.svh missing: re-export the network (make export NET=$NET)"
fi

mkdir -p "$OUT"
# results of an earlier run must not pass for this one's
rm -f "$OUT/${NET}_pynq-z2.bit" "$OUT/${NET}_pynq-z2.hwh" "$OUT/timing.txt" "$OUT/utilization.txt"
if [ "$ENGINE" = rtl ]; then
    # packaged every time (about a minute of Vivado): the IP is always rtl/ and this export as they are now
    echo "bitstream.sh: $NET, packaging the RTL twin (rtl/, $EXPORT/rtl_params.svh) as an IP -> $RTL_IP_DIR"
    mkdir -p "$(dirname "$RTL_IP_DIR")"
    rc=0
    ( cd "$OUT" && vivado -mode batch -nojournal -log "$OUT/package_rtl_ip.log" \
          -source "$repo/board/ip/package_rtl_ip.tcl" -tclargs "$EXPORT" "$RTL_IP_DIR" ) || rc=$?
    if [ "$rc" -ne 0 ] || [ ! -f "$RTL_IP_DIR/component.xml" ]; then
        die "packaging the RTL twin failed (exit $rc; log: $OUT/package_rtl_ip.log). No bitstream was built; nothing copied to $BITSTREAMS." 1
    fi
    ip_repo="$RTL_IP_DIR"
fi
echo "bitstream.sh: $NET, engine $ENGINE, IP $ip_repo -> $OUT"
rc=0
( cd "$OUT" && vivado -mode batch -nojournal -log "$OUT/vivado.log" \
      -source "$repo/board/pynq_z2.tcl" -tclargs "$ip_repo" "$OUT" "$NET" "$JOBS" "$ENGINE" ) || rc=$?

# the timing and utilization summary (pynq_z2.tcl writes it after implementation)
field() { awk -v k="$1" '$1 == k {print $2; exit}' "$2" 2>/dev/null || true; }
wns="$(field wns_ns "$OUT/timing.txt")"
whs="$(field whs_ns "$OUT/timing.txt")"
fclk="$(field fclk_mhz "$OUT/timing.txt")"
util=""
if [ -f "$OUT/utilization.txt" ]; then
    util="$(awk '{printf "%s%s %s/%s (%s%%)", (NR > 1 ? ", " : ""), toupper($1), $2, $3, $4}' "$OUT/utilization.txt")"
fi
if [ -f "$OUT/timing.txt" ]; then
    echo "bitstream.sh: timing at ${fclk:-?} MHz: worst setup slack (WNS) ${wns:-?} ns, worst hold slack (WHS) ${whs:-?} ns"
    [ -z "$util" ] || echo "bitstream.sh: utilization: $util"
    echo "bitstream.sh: reports: $OUT/timing_summary.rpt, $OUT/utilization.rpt"
fi
is_number() { [[ "$1" =~ ^-?([0-9]+\.?[0-9]*|\.[0-9]+)$ ]]; }
negative() { awk -v v="$1" 'BEGIN { exit !(v + 0 < 0) }'; }
if [ ! -f "$OUT/timing.txt" ]; then
    [ "$rc" -eq 0 ] || die "Vivado failed (exit $rc) before timing was known (log: $OUT/vivado.log). Nothing copied to $BITSTREAMS." 1
    die "Vivado wrote no $OUT/timing.txt (log: $OUT/vivado.log). Nothing copied to $BITSTREAMS." 1
fi
for s in "WNS:$wns:setup" "WHS:$whs:hold"; do
    IFS=: read -r name value kind <<< "$s"
    if ! is_number "$value"; then
        die "timing unknown: worst $kind slack ($name) is '$value' in $OUT/timing.txt. No bitstream copied to $BITSTREAMS." 1
    fi
    if negative "$value"; then
        die "timing NOT met at ${fclk:-?} MHz: worst $kind slack ($name) $value ns < 0 (see $OUT/timing_summary.rpt). No bitstream copied to $BITSTREAMS; lower the clock or shorten the critical path." 1
    fi
done
[ "$rc" -eq 0 ] || die "Vivado failed (exit $rc; log: $OUT/vivado.log). Nothing copied to $BITSTREAMS." 1

for ext in bit hwh; do
    [ -f "$OUT/${NET}_pynq-z2.$ext" ] || die "Vivado did not write $OUT/${NET}_pynq-z2.$ext (log: $OUT/vivado.log). Nothing copied to $BITSTREAMS." 1
done
mkdir -p "$BITSTREAMS"
for ext in bit hwh; do
    cp "$OUT/${NET}_pynq-z2.$ext" "$BITSTREAMS/${NET}_pynq-z2.$ext"
done
net_id="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network_id"])' "$EXPORT/manifest.json")"
hls_ip=""
if [ "$ENGINE" = hls ]; then hls_ip="\"hls_ip\": \"$ip_repo\","; fi
cat > "$BITSTREAMS/${NET}_pynq-z2.json" <<EOF
{
  "network": "$NET",
  "network_id": "$net_id",
  "manifest": "$EXPORT/manifest.json",
  "engine": "$ENGINE",
  "ip_repo": "$ip_repo",${hls_ip:+
  $hls_ip}
  "vivado": "$(vivado -version 2>/dev/null | head -n 1)",
  "fclk0_mhz": ${fclk:-100},
  "wns_ns": $wns,
  "whs_ns": $whs,
  "utilization": "$util",
  "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
EOF
echo "bitstream.sh: $BITSTREAMS/${NET}_pynq-z2.bit, .hwh, .json (engine $ENGINE, network ID $net_id, WNS $wns ns, WHS $whs ns)"
echo "bitstream.sh: next: board/deploy.sh BOARD=<pynq host> NET=$NET"
