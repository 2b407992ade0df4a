#!/usr/bin/env bash
# The compiler launcher of every Verilator build (the cocotb models of sim/rtl/runner.py and
# sim/rtl/modules.py, the fast models of sim/harness/rtl_fast.py): Verilator's makefiles run
# `$(OBJCACHE) $(CXX) ARGS`, and OBJCACHE is `bash vl_cxx.sh`.
#
# Each C++ compile gets `-include zq_vl_pch.h`: Verilator's runtime headers (verilated.h,
# verilated_dpi.h, verilated_vpi.h), precompiled once for each set of compiler flags and shared by
# every build; parsing them was about half of each compile. GCC takes the first precompiled header
# in zq_vl_pch.h.gch/ that fits the compile's flags; where none fits, it reads the header's text,
# which includes the same headers. The objects are the same either way.
#
# Environment: ZQ_PCH_DIR, the folder of zq_vl_pch.h (unset: the compile runs as it is);
# ZQ_PCH_LAUNCHER, what runs the compiler (ccache, or empty).
set -euo pipefail
cxx=$1
shift
launch=()
if [ -n "${ZQ_PCH_LAUNCHER:-}" ]; then
    read -ra launch <<< "$ZQ_PCH_LAUNCHER"   # (its words, as make would have split $(OBJCACHE))
    # ccache caches a compile that uses a precompiled header only with these
    export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}pch_defines,time_macros"
fi
dir=${ZQ_PCH_DIR:-}
compile=0
opt=""
flags=()   # the flags that decide whether a precompiled header fits (and that build it)
args=("$@")
n=${#args[@]}
i=0
while [ -n "$dir" ] && [ "$i" -lt "$n" ]; do
    a=${args[$i]}
    case $a in
        -c) compile=1 ;;
        -o|-MF|-MT|-MQ) i=$((i + 1)) ;;                 # the output and dependency files
        -MMD|-MD|-MP|-W*) ;;
        -E|-S|-x|-include) compile=0; break ;;          # not a plain compile: it runs as it is
        -fprofile-*) compile=0; break ;;                # g++ 12 crashes on a .gch with profiling
        -O*) opt=$a ;;                                  # the last one counts
        -DZQ_*) ;;                                      # ours: not seen by Verilator's headers
        -I|-D|-U|-isystem|-iquote|-idirafter) flags+=("$a" "${args[$((i + 1))]}"); i=$((i + 1)) ;;
        -*) flags+=("$a") ;;
        *) ;;                                           # the source file
    esac
    i=$((i + 1))
done
# (g++ 12 takes a header precompiled at -O1 for an -O2 compile, and may then crash: the same level)
if [ -n "$opt" ]; then flags+=("$opt"); fi
if [ "$compile" = 1 ]; then
    key=$(printf '%s\n' "$cxx" "${flags[@]}" | sha1sum | cut -c1-16)
    gch="$dir/zq_vl_pch.h.gch/$key.gch"
    if [ ! -f "$gch" ] && [ ! -f "$dir/.$key.failed" ]; then
        mkdir -p "$dir/zq_vl_pch.h.gch"
        (
            if command -v flock >/dev/null; then flock 9; fi   # one process builds it, the others wait
            if [ ! -f "$gch" ] && [ ! -f "$dir/.$key.failed" ]; then
                tmp="$dir/.$key.$$.tmp"
                if "$cxx" "${flags[@]}" -x c++-header "$dir/zq_vl_pch.h" -o "$tmp" 2>"$dir/.$key.log"; then
                    mv -f "$tmp" "$gch"
                else
                    rm -f "$tmp"   # none for these flags (the log says why): the compiles parse the text
                    touch "$dir/.$key.failed"
                fi
            fi
        ) 9>"$dir/.$key.lock"
    fi
    if [ -f "$gch" ]; then
        err=$(mktemp)
        if "${launch[@]}" "$cxx" -include "$dir/zq_vl_pch.h" "${args[@]}" 2>"$err"; then
            cat "$err" >&2
            rm -f "$err"
            exit 0
        fi
        # it failed with the header: it runs again without (whose messages the log gets), and these
        # flags are not given the header again
        rm -f "$err"
        touch "$dir/.$key.failed"
    fi
fi
exec "${launch[@]}" "$cxx" "${args[@]}"
