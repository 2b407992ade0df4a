"""The compiler launcher of every Verilator build (sim/rtl/vl_cxx.sh): Verilator's headers precompiled
once per set of compiler flags, the same objects as without it, and a plain compile wherever a
precompiled header cannot be made or used."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from zynqflow.sim.rtl import runner

SOURCE = """#include "verilated.h"
#include "verilated_dpi.h"
int zq_probe(int x) { return static_cast<int>(sizeof(VerilatedContext)) + x; }
"""


@pytest.fixture(scope="module")
def inc() -> Path:
    try:
        runner._ensure_verilator()
    except runner.RtlUnavailable as e:
        pytest.skip(str(e))
    d = runner.verilator_include(dict(os.environ))
    if d is None or shutil.which("c++") is None:
        pytest.skip("no Verilator headers or no c++")
    return d


def _pch_dir(tmp: Path, text: str | None = None) -> Path:
    d = tmp / "pch"
    d.mkdir()
    (d / "zq_vl_pch.h").write_text(text or "".join(f'#include "{h}"\n' for h in runner.PCH_HEADERS))
    return d


def _compile(tmp: Path, inc: Path, pch: Path | None, out: str, *flags: str,
             source: str = SOURCE) -> subprocess.CompletedProcess:
    src = tmp / "probe.cpp"
    src.write_text(source)
    env = dict(os.environ, ZQ_PCH_LAUNCHER="")
    if pch is None:
        cmd = ["c++"]
        env.pop("ZQ_PCH_DIR", None)
    else:
        cmd = ["bash", str(runner.VL_CXX), "c++"]
        env["ZQ_PCH_DIR"] = str(pch)
    cmd += ["--std=c++17", f"-I{inc}", f"-I{inc / 'vltstd'}", *flags, "-c", str(src), "-o", str(tmp / out)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def _gch(pch: Path) -> list[str]:
    d = pch / "zq_vl_pch.h.gch"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_one_header_per_flags_used_and_the_same_object(tmp_path, inc):
    pch = _pch_dir(tmp_path)
    assert _compile(tmp_path, inc, pch, "a.o", "-O1").returncode == 0
    first = _gch(pch)
    assert len(first) == 1
    assert _compile(tmp_path, inc, pch, "b.o", "-O1", "-DZQ_MAXI=1").returncode == 0   # ours: not a new header
    assert _gch(pch) == first
    assert _compile(tmp_path, inc, None, "plain.o", "-O1").returncode == 0
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "plain.o").read_bytes()
    used = _compile(tmp_path, inc, pch, "c.o", "-O1", "-Winvalid-pch")
    assert used.returncode == 0 and "not used" not in used.stderr
    assert _compile(tmp_path, inc, pch, "d.o", "-O0").returncode == 0   # another level: a header of its own
    assert len(_gch(pch)) == 2 and set(first) < set(_gch(pch))


def test_plain_compile_where_no_header_can_be_made(tmp_path, inc):
    pch = _pch_dir(tmp_path, '#include "verilated.h"\n#error not a header\n')
    r = _compile(tmp_path, inc, pch, "a.o", "-O1")
    assert r.returncode == 0, r.stderr
    assert _gch(pch) == [] and len(list(pch.glob(".*.failed"))) == 1
    assert _compile(tmp_path, inc, None, "plain.o", "-O1").returncode == 0
    assert (tmp_path / "a.o").read_bytes() == (tmp_path / "plain.o").read_bytes()


def test_instrumented_compiles_get_no_header(tmp_path, inc):
    """g++ 12 crashes on a precompiled header when instrumenting for profile-guided builds."""
    pch = _pch_dir(tmp_path)
    assert _compile(tmp_path, inc, pch, "a.o", "-O2", "-fprofile-generate").returncode == 0
    assert _gch(pch) == []


def test_compile_errors_still_reach_the_log(tmp_path, inc):
    pch = _pch_dir(tmp_path)
    r = _compile(tmp_path, inc, pch, "a.o", "-O1", source=SOURCE + "int broken() { return undefined_name; }\n")
    assert r.returncode != 0 and "undefined_name" in r.stderr and not (tmp_path / "a.o").exists()
