"""Packaging: the metadata in one place (setup.cfg), the core installable on the PYNQ image as it
ships (Python 3.10, pip 22.0.2, setuptools 59.6, wheel, no build isolation), pynq pinned to 3.x."""

from __future__ import annotations

import configparser
import glob
import os
import shutil
import subprocess
import tomllib
import warnings
from pathlib import Path

import pytest

from zynqflow.spec.paths import REPO

IMAGE_TOOLS = ("pip==22.0.2", "setuptools==59.6.0", "wheel")     # what the PYNQ 3.0.1 image has


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def test_metadata_in_one_place_and_pynq_pinned():
    """setup.cfg holds the metadata; pyproject.toml only the build system (no [project] table, which
    setuptools 59.6 ignores, no PEP 639 license string, which needs setuptools >= 77)."""
    py = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "project" not in py, "metadata in pyproject.toml [project]: setuptools 59.6 cannot read it"
    req = py["build-system"]["requires"]
    assert req[0].startswith("setuptools") and "77" not in req[0] and "wheel" in req
    cfg = _setup_cfg()
    assert cfg["metadata"]["name"] == "zynqflow" and cfg["metadata"]["license"] == "Apache-2.0"
    extras = {k: [r.strip() for r in v.strip().splitlines() if r.strip()]
              for k, v in cfg["options.extras_require"].items()}
    # pynq 4 dropped the Zynq-7000 boards: the board extra must stay on 3.x
    # and pycparser 3 removed pycparser.plyparser, which pynq 3.x's pynq.lib imports
    assert extras["board"] == ["pynq>=3,<4", "pycparser<3"]
    assert all(e in extras["all"][0] for e in ("train", "sim", "board", "dse", "dev"))
    assert cfg["options.entry_points"]["console_scripts"].strip() == "zynqflow = zynqflow.host.cli:main"
    # the venv (make setup) installed what setup.cfg says: pynq 3.x where it is installed at all
    from importlib.metadata import PackageNotFoundError, requires, version

    assert any(r.replace(" ", "").startswith("pynq<4,>=3") for r in requires("zynqflow") or []), requires("zynqflow")
    try:
        assert version("pynq").split(".")[0] == "3", f"pynq {version('pynq')} in the venv: make setup installs 3.x"
        import pynq.lib.dma  # noqa: F401  (pynq's own DMA driver, which the shim runs: it imports)
    except PackageNotFoundError:
        pass


def _python310() -> str | None:
    for cand in [shutil.which("python3.10"), *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.10*/bin/python3.10"))),
                 *sorted(glob.glob("/usr/local/bin/python3.10")), *sorted(glob.glob("/usr/bin/python3.10"))]:
        if cand and subprocess.run([cand, "-c", "import sys, venv; assert sys.version_info[:2] == (3, 10)"],
                                   capture_output=True).returncode == 0:
            return cand
    return None


def _cannot(why: str):
    """Say it loudly (a warning in the summary and the skip reason), then skip."""
    warnings.warn(f"CANNOT CHECK the install on the PYNQ image's toolchain: {why}")
    pytest.skip(f"CANNOT CHECK the install on the PYNQ image's toolchain: {why}")


def test_core_installs_with_the_image_toolchain(tmp_path):
    """The core (numpy + Pillow, no extras) builds and installs with the PYNQ-Z2 image's pip 22.0.2,
    setuptools 59.6 and wheel on Python 3.10, without build isolation (an offline board)."""
    py = _python310()
    if py is None:
        _cannot("no Python 3.10 on this machine (the image has one; pyenv install 3.10 here)")
    venv = tmp_path / "venv"
    subprocess.run([py, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    vpy = str(venv / "bin" / "python")
    r = subprocess.run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", *IMAGE_TOOLS],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        _cannot(f"pip could not fetch {' '.join(IMAGE_TOOLS)} (no package index?): {r.stderr[-400:]}")
    got = subprocess.run([vpy, "-c", "import pip, setuptools; print(pip.__version__, setuptools.__version__)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert got == ["22.0.2", "59.6.0"], got
    # a copy of the tracked sources (a build in the checkout would write into its build/)
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        p = REPO / f
        if p.is_file() and (f.split("/")[0] in ("spec", "host", "model", "export", "sim", "bench", "dse")
                            or f in ("setup.cfg", "pyproject.toml")):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, src / f)
    for f in ("setup.cfg",):        # an uncommitted setup.cfg (this checkout) counts too
        if (REPO / f).is_file():
            shutil.copy2(REPO / f, src / f)
    r = subprocess.run([vpy, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                        "--disable-pip-version-check", str(src)], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PIP_NO_INPUT": "1"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    show = subprocess.run([vpy, "-m", "pip", "show", "-f", "zynqflow"], capture_output=True, text=True).stdout
    assert "Version: 0.1.0" in show and "Requires: numpy, pillow" in show, show[:600]
    assert "zynqflow/host/cli.py" in show and "zynqflow/spec/engine.py" in show
    code = ("import importlib.metadata as m, zynqflow.spec.engine as E; "
            "eps = m.entry_points(); "
            "print([e.value for e in eps.select(group='console_scripts', name='zynqflow')], E.SPEC_VERSION, "
            "sorted(m.metadata('zynqflow').get_all('Provides-Extra')))")
    out = subprocess.run([vpy, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "['zynqflow.host.cli:main']" in out.stdout and "'board'" in out.stdout
    assert (venv / "bin" / "zynqflow").is_file()
