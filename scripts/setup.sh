#!/usr/bin/env bash
# One-time setup, run by the Makefile before anything else:
#  - the Debian package dataset-fashion-mnist (when apt-get and root are available)
#  - a venv in .venv with torch==2.13.0 (the CPU build; installed first and
#    explicitly so no multi-GB CUDA build is pulled), then this project and
#    its dependencies from PyPI.
set -euo pipefail
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}

# Debian packages: the Fashion-MNIST files, Yosys (RTL elaboration test, make synth-estimate) and sudo
# (visudo checks the board's sudoers drop-in, tests/test_host.py)
apt_pkgs=()
[ -d /usr/share/datasets/fashion-mnist ] || apt_pkgs+=(dataset-fashion-mnist)
command -v yosys >/dev/null 2>&1 || apt_pkgs+=(yosys)
command -v visudo >/dev/null 2>&1 || [ -x /usr/sbin/visudo ] || apt_pkgs+=(sudo)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${apt_pkgs[*]}"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null) \
      || echo "setup: apt-get could not install ${apt_pkgs[*]} (Fashion-MNIST: pass DATA_DIR=dir or let the loader download it)"
  else
    echo "setup: missing ${apt_pkgs[*]} and apt-get/root unavailable (Fashion-MNIST: pass DATA_DIR=dir or let the loader download it)"
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip 2>&1 | grep -v -i "warning" || true
if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
  echo "setup: installing torch==2.13.0 (CPU build)"
  "$VENV/bin/python" -m pip install -q torch==2.13.0
fi
echo "setup: installing zynqflow and its dependencies"
"$VENV/bin/python" -m pip install -q -e ".[all]" 2>&1 | grep -v -i -E "warning|^\s*$|!!|wheel_obj|\*{5}" || true
"$VENV/bin/python" -c "import zynqflow.spec, zynqflow.model, torch, numpy, cocotb, hls4ml" \
  || { echo "setup: the venv is incomplete (see pip output above)"; exit 1; }
