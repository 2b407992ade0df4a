#!/usr/bin/env bash
# Run the Vitis HLS flow (C simulation, synthesis, co-simulation, IP export) for one
# exported network.
#
#   hls/scripts/hls.sh <export_dir> <out_dir> [steps]
#
# steps: comma-separated subset of csim,csynth,cosim,export (default: all, or $ZQ_HLS_STEPS).
# Environment: ZQ_HLS_PART, ZQ_HLS_CLOCK, ZQ_COSIM_FRAMES, ZQ_COSIM_PROTOCOL (see run_hls.tcl);
# ZQ_HLS_TOOL=vitis_hls|vitis-run picks the command when both are installed.
#
# Written for Vitis HLS 2023.2 (`vitis_hls -f run_hls.tcl`) and Vitis 2024.2 / 2025.1, where
# vitis_hls is gone and the same Tcl runs as `vitis-run --mode hls --tcl run_hls.tcl`. The
# arguments reach the script as ZQ_HLS_EXPORT, ZQ_HLS_OUT, ZQ_HLS_STEPS (vitis-run has no
# -tclargs); vitis_hls also gets them as -tclargs.
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ $# -lt 2 ]; then
    echo "usage: $0 <export_dir> <out_dir> [steps]" >&2
    exit 2
fi
tool="${ZQ_HLS_TOOL:-}"
if [ -z "$tool" ]; then
    if command -v vitis_hls >/dev/null 2>&1; then
        tool=vitis_hls
    elif command -v vitis-run >/dev/null 2>&1; then
        tool=vitis-run
    fi
fi
if [ -z "$tool" ] || ! command -v "$tool" >/dev/null 2>&1; then
    echo "vitis_hls not found on PATH, nor vitis-run: the HLS flow needs Vitis HLS 2023.2 (vitis_hls) or" \
         "Vitis 2024.2+ (vitis-run --mode hls); source its settings64.sh. The C simulation without it: make csim" >&2
    exit 1
fi
for f in net_params.h weights.bin; do
    if [ ! -f "$1/$f" ]; then
        echo "$0: $1 has no $f (run the exporter first: make export)" >&2
        exit 2
    fi
done
export_dir="$(cd "$1" && pwd)"
mkdir -p "$2"
out_dir="$(cd "$2" && pwd)"
steps="${3:-${ZQ_HLS_STEPS:-csim,csynth,cosim,export}}"
steps="${steps// /,}"
export ZQ_HLS_EXPORT="$export_dir" ZQ_HLS_OUT="$out_dir" ZQ_HLS_STEPS="$steps"

cd "$out_dir"
echo "hls.sh: $tool on $export_dir -> $out_dir ($steps)"
if [ "$tool" = "vitis-run" ]; then
    exec vitis-run --mode hls --tcl "$script_dir/run_hls.tcl" --work_dir "$out_dir"
fi
exec vitis_hls -l "$out_dir/vitis_hls.log" -f "$script_dir/run_hls.tcl" -tclargs "$export_dir" "$out_dir" "$steps"
