"""Packaging: the metadata in one place (setup.cfg), the core installable on the PYNQ image as it
ships (Python 3.10, pip 22.0.2, setuptools 59.6, wheel 0.37.1, no build isolation; numpy 1.21 and
Pillow 9.0, the image's), also editable (``pip install -e .``), pynq pinned to 3.x."""

from __future__ import annotations

import configparser
import glob
import json
import os
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest

from zynqflow.spec.paths import REPO

# what the PYNQ-Z2 v3.0.1 image has (Ubuntu 22.04: python3-pip 22.0.2, python3-setuptools 59.6.0,
# python3-wheel 0.37.1, python3-numpy 1.21.5, python3-pil 9.0.1; Python 3.10)
IMAGE_TOOLS = ("pip==22.0.2", "setuptools==59.6.0", "wheel==0.37.1")
IMAGE_LIBS = ("numpy==1.21.5", "pillow==9.0.1")


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


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PIP_NO_INPUT": "1", "PYTHONPATH": ""}, **kw)


def test_core_installs_with_the_image_toolchain(tmp_path):
    """The core builds and installs with the PYNQ-Z2 image's pip 22.0.2, setuptools 59.6 and wheel
    0.37.1 on Python 3.10, without build isolation (an offline board), its requirements met by the
    image's numpy 1.21 and Pillow 9.0 (not --no-deps); the installed command classifies an image
    with the golden model bit for bit as this checkout does. Then ``pip install -e .`` on the same
    toolchain (setup.py develop: setuptools 59.6 has no PEP 660) and ``import zynqflow.host`` from
    elsewhere imports the checkout's code."""
    py = _python310()
    if py is None:
        _cannot("no Python 3.10 on this machine (the image has one; pyenv install 3.10 here)")
    venv = tmp_path / "venv"
    subprocess.run([py, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    vpy = str(venv / "bin" / "python")
    # the image's wheels, fetched once into the checkout's build/ (later runs need no package index)
    wheels = REPO / "build" / "image-wheels"
    if len(list(wheels.glob("*.whl"))) < len(IMAGE_TOOLS + IMAGE_LIBS):
        r = _run([vpy, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary", ":all:",
                  "-d", str(wheels), *IMAGE_TOOLS, *IMAGE_LIBS])
        if r.returncode != 0:
            _cannot(f"pip could not fetch {' '.join(IMAGE_TOOLS + IMAGE_LIBS)} (no package index?): {r.stderr[-400:]}")
    r = _run([vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", "--find-links",
              str(wheels), *IMAGE_TOOLS, *IMAGE_LIBS])
    assert r.returncode == 0, r.stderr[-2000:]
    got = _run([vpy, "-c", "import sys, pip, setuptools, wheel, numpy, PIL; print(sys.version_info[:2] == (3, 10), "
                           "pip.__version__, setuptools.__version__, wheel.__version__, numpy.__version__, "
                           "PIL.__version__)"]).stdout.split()
    assert got == ["True", "22.0.2", "59.6.0", "0.37.1", "1.21.5", "9.0.1"], got
    # a copy of the tracked sources (a build in the checkout would write into its build/)
    src = tmp_path / "src"
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for f in files:
        p = REPO / f
        if p.is_file() and (f.split("/")[0] in ("spec", "host", "model", "export", "sim", "bench", "dse")
                            or f in ("setup.cfg", "setup.py", "pyproject.toml")):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, src / f)
    for f in ("setup.cfg", "setup.py"):        # uncommitted ones (this checkout) count too
        if (REPO / f).is_file():
            shutil.copy2(REPO / f, src / f)
    pip = [vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--disable-pip-version-check"]
    r = _run([*pip, str(src)])
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "Requirement already satisfied: numpy" in r.stdout and "Requirement already satisfied: pillow" in r.stdout
    code = ("import importlib.metadata as m, zynqflow.spec.engine as E; "
            "eps = m.entry_points(); files = [str(f) for f in m.files('zynqflow')]; "
            "print([e.value for e in eps.select(group='console_scripts', name='zynqflow')], E.SPEC_VERSION, "
            "sorted(m.metadata('zynqflow').get_all('Provides-Extra')), m.version('zynqflow'), m.requires('zynqflow')[:2], "
            "'zynqflow/host/cli.py' in files and 'zynqflow/spec/engine.py' in files)")
    out = _run([vpy, "-c", code], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "['zynqflow.host.cli:main']" in out.stdout and "'board'" in out.stdout
    assert out.stdout.rstrip().endswith("0.1.0 ['numpy', 'pillow'] True"), out.stdout
    assert (venv / "bin" / "zynqflow").is_file()
    # the golden model on the image's numpy and Pillow: the same logits as here, bit for bit
    from PIL import Image

    from zynqflow.export import fixtures as exports

    tiny = exports.random_export("zynqnet-tiny", seed=0, vectors=16)
    Image.fromarray((np.arange(20 * 24) % 251).astype(np.uint8).reshape(20, 24)).save(tmp_path / "a.png")
    args = ["classify", str(tmp_path / "a.png"), "--backend", "golden", "--export", str(tiny), "--json", "--top", "10"]
    there = _run([str(venv / "bin" / "zynqflow"), *args], cwd=tmp_path)
    here = _run([sys.executable, "-m", "zynqflow.host.cli", *args], cwd=tmp_path)
    assert there.returncode == 0 and here.returncode == 0, there.stderr + here.stderr
    def logits(out):        # the integers (labels, logits, scores); p is a float softmax, numpy's own exp
        return [[(t["class"], t["logit"], t["score"]) for t in r["topk"]] + [r["label"]]
                for r in json.loads(out)["results"]]
    assert logits(there.stdout) == logits(here.stdout) and len(logits(here.stdout)[0]) == 11
    # pip install -e . on the same toolchain: the checkout's code, from any directory
    r = _run([*pip, "-e", str(src)])                 # replaces the install above
    assert r.returncode == 0 and "setup.py develop" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
    out = _run([vpy, "-c", "import zynqflow.host, zynqflow.spec.paths as P; print(P.REPO)"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(src.resolve())
    (src / "host" / "edited.py").write_text("WHERE = 'the checkout'\n")      # editable: the checkout's files
    out = _run([vpy, "-c", "from zynqflow.host.edited import WHERE; print(WHERE)"], cwd=tmp_path)
    assert out.stdout.strip() == "the checkout", out.stderr
