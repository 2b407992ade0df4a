#!/usr/bin/env bash
# Run the Vitis HLS flow (C simulation, synthesis, co-simulation, IP export)
# for one exported network.
#
#   hls/scripts/hls.sh <export_dir> <out_dir> [steps]
#
# steps: comma-separated subset of csim,csynth,cosim,export (default: all,
# or $ZQ_HLS_STEPS). Environment: ZQ_HLS_PART, ZQ_HLS_CLOCK (see run_hls.tcl).
set -euo pipefail

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ $# -lt 2 ]; then
    echo "usage: $0 <export_dir> <out_dir> [steps]" >&2
    exit 2
fi
if ! command -v vitis_hls >/dev/null 2>&1; then
    echo "vitis_hls not found on PATH: the HLS flow needs Vitis HLS 2023.2 (source its settings64.sh);" \
         "the C simulation without it: make csim" >&2
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

cd "$out_dir"
exec vitis_hls -l "$out_dir/vitis_hls.log" -f "$script_dir/run_hls.tcl" -tclargs "$export_dir" "$out_dir" "$steps"
