"""The command line: option values, the default export from any directory,
--no-download, --fclk-mhz and --retries, the XILINX_XRT hint and --preprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zynqflow.export import fixtures as exports
from zynqflow.host import Accelerator, BackendError
from zynqflow.host import cli
from zynqflow.host import manifest as M
from zynqflow.host.manifest import REPO, Export
from zynqflow.host.preprocess import frames_for


@pytest.fixture(scope="module")
def tiny() -> Path:
    return exports.random_export("zynqnet-tiny", seed=0, vectors=16)


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """No $ZYNQFLOW_EXPORT, an empty user config directory, cwd in an empty directory."""
    for k in ("ZYNQFLOW_EXPORT", "ZYNQFLOW_CONFIG", "XILINX_XRT"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


# ---- option values ------------------------------------------------------------------------
@pytest.mark.parametrize("args,flag,text", [
    (["classify", "x.png", "--timeout", "-1"], "--timeout", "must be a time in seconds > 0, got -1"),
    (["classify", "x.png", "--timeout", "0"], "--timeout", "> 0, got 0"),
    (["classify", "x.png", "--timeout", "nan"], "--timeout", "'nan' is not a finite number"),
    (["classify", "x.png", "--top", "0"], "--top", "must be at least 1, got 0"),
    (["classify", "x.png", "--top", "two"], "--top", "'two' is not an integer"),
    (["stream", "d", "--top", "-3"], "--top", "must be at least 1, got -3"),
    (["stream", "d", "--limit", "-1"], "--limit", "must be 0 or more, got -1"),
    (["stream", "d", "--backpressure", "1.5"], "--backpressure", "probability in [0, 1), got 1.5"),
    (["benchmark", "--frames", "0"], "--frames", "must be at least 1, got 0"),
    (["benchmark", "--rtl-frames", "0"], "--rtl-frames", "must be at least 1, got 0"),
    (["benchmark", "--frames", "2.5"], "--frames", "'2.5' is not an integer"),
    (["info", "--timeout", "inf"], "--timeout", "'inf' is not a finite number"),
    (["classify", "x.png", "--preprocess", "zoom"], "--preprocess", "invalid choice: 'zoom'"),
    (["stream", "d", "--fclk-mhz", "0"], "--fclk-mhz", "must be a clock in MHz > 0, got 0"),
    (["benchmark", "--fclk-mhz", "fast"], "--fclk-mhz", "'fast' is not a number"),
    (["classify", "x.png", "--retries", "-1"], "--retries", "must be 0 or more, got -1"),
])
def test_bad_option_values_name_the_flag(args, flag, text, tiny, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(args + ["--export", str(tiny), "--backend", "golden"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    assert f"argument {flag}" in err and text in err, err


def test_benchmark_frames_zero_no_nan(tiny, capsys):
    """--frames 0 used to print NaN frames/s and 'identical' and exit 0."""
    with pytest.raises(SystemExit):
        cli.main(["benchmark", "--export", str(tiny), "--backend", "golden", "--frames", "0"])
    out, err = capsys.readouterr()
    assert "nan" not in out.lower() and "identical" not in out and "--frames" in err
    assert cli.main(["benchmark", "--export", str(tiny), "--backend", "golden", "--frames", "1"]) == 0
    assert "identical" in capsys.readouterr().out


# ---- the default export ----------------------------------------------------------------------
def test_default_export_is_not_relative_to_the_current_directory(clean_env, tiny, monkeypatch, capsys):
    assert M.DEFAULT_EXPORT.is_absolute() and M.DEFAULT_EXPORT == REPO / "build" / "zynqnet-mini" / "export"
    monkeypatch.setattr(M, "DEFAULT_EXPORT", Path(tiny))     # "the checkout's export", seen from elsewhere
    assert cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["export"] == str(Path(tiny).resolve()) and info["export_from"] == "the checkout"
    monkeypatch.setattr(M, "DEFAULT_EXPORT", clean_env / "none")
    assert cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert "no export given and none found" in err and "$ZYNQFLOW_EXPORT (not set)" in err
    assert str(clean_env / "xdg" / "zynqflow" / "config.json") in err and str(clean_env / "none") in err


def test_default_export_from_env_and_user_config(clean_env, tiny, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(M, "DEFAULT_EXPORT", tmp_path / "none")
    cfg = clean_env / "xdg" / "zynqflow" / "config.json"
    cfg.parent.mkdir(parents=True)
    (cfg.parent / "exports").mkdir()
    (cfg.parent / "exports" / "tiny").symlink_to(tiny)
    cfg.write_text(json.dumps({"export": "exports/tiny"}))          # relative to the config file
    assert cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["export_from"] == str(cfg) and info["network"] == "zynqnet-tiny"
    # $ZYNQFLOW_EXPORT wins over the config file, --export over both
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv("ZYNQFLOW_EXPORT", str(other))
    assert cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert f"{other}/manifest.json: no such manifest" in err and "[default export, from $ZYNQFLOW_EXPORT]" in err
    assert cli.main(["info", "--json", "--export", str(tiny)]) == 0
    assert json.loads(capsys.readouterr().out)["export_from"] == "--export"
    monkeypatch.delenv("ZYNQFLOW_EXPORT")
    cfg.write_text('{"exprot": "x"}')
    assert cli.main(["info"]) == 2
    assert f"{cfg}: not a zynqflow config" in capsys.readouterr().err
    monkeypatch.setenv("ZYNQFLOW_CONFIG", str(tmp_path / "alt.json"))
    (tmp_path / "alt.json").write_text(json.dumps({"export": str(tiny)}))
    assert cli.main(["info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["export_from"] == str(tmp_path / "alt.json")


def test_default_export_installed_by_deploy(tiny, tmp_path):
    """The tree deploy.sh installs finds its export from any directory, without
    $ZYNQFLOW_EXPORT: <DEST>/zynqflow.json beside <DEST>/lib/zynqflow/."""
    bit = tmp_path / "bits" / "zynqnet-tiny_pynq-z2.bit"
    bit.parent.mkdir()
    bit.write_bytes(b"\0")
    bit.with_suffix(".hwh").write_text("<hwh/>")
    stage = tmp_path / "dest"
    r = subprocess.run(["bash", str(REPO / "board" / "deploy.sh"), "BOARD=pynq.invalid", "NET=zynqnet-tiny",
                        f"EXPORT={tiny}", f"BIT={bit}", "DRY_RUN=1", f"STAGE_DIR={stage}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads((stage / "zynqflow.json").read_text()) == {"export": "zynqnet-tiny"}
    env = {k: v for k, v in os.environ.items() if k not in ("ZYNQFLOW_EXPORT", "ZYNQFLOW_CONFIG")}
    env.update(PYTHONPATH=str(stage / "lib"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    work = tmp_path / "work"
    work.mkdir()
    p = subprocess.run([sys.executable, "-m", "zynqflow.host.cli", "info", "--json"], capture_output=True,
                       text=True, env=env, cwd=work, timeout=120)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["export"] == str((stage / "zynqnet-tiny").resolve())
    assert info["export_from"] == str(stage / "zynqflow.json")


# ---- --no-download and the XILINX_XRT hint (the pynq backend's board call, recorded) ----------
@pytest.fixture
def with_bit(tiny, tmp_path) -> Path:
    """The export with a bitstream and its .hwh beside the manifest (the CLI checks them before the PL)."""
    import shutil

    d = tmp_path / "with_bit"
    shutil.copytree(tiny, d)
    (d / "zynqnet-tiny_pynq-z2.bit").write_bytes(b"\0")
    (d / "zynqnet-tiny_pynq-z2.hwh").write_text("<hwh/>")
    (d / "zynqnet-tiny_pynq-z2.json").write_text(json.dumps({"fclk0_mhz": 100, "wns_ns": 0.4}))   # timing record
    return d


def _fake_board(monkeypatch, error: str):
    import zynqflow.host.board as board

    calls = []

    def open_driver(export, **kw):
        calls.append(kw)
        raise BackendError(error)
    monkeypatch.setattr(board, "open_driver", open_driver)
    return calls


def test_no_download_fclk_retries_reach_the_pynq_backend(with_bit, monkeypatch, capsys):
    tiny = with_bit
    calls = _fake_board(monkeypatch, "stop here")
    args = ["info", "--export", str(tiny)]
    assert cli.main(["benchmark", "--backend", "pynq", "--export", str(tiny), "--no-download"]) == 2
    assert cli.main(["benchmark", "--backend", "pynq", "--export", str(tiny), "--timeout", "2.5",
                     "--fclk-mhz", "50", "--retries", "0"]) == 2
    assert [c["download"] for c in calls] == [False, True] and calls[1]["timeout_s"] == 2.5
    assert "fclk_mhz" not in calls[0] or calls[0]["fclk_mhz"] is None
    assert calls[1]["fclk_mhz"] == 50.0 and calls[1]["retries"] == 0
    assert "stop here" in capsys.readouterr().err
    assert cli.main(args) == 0


def test_fclk_retries_reach_the_rtl_backend(tiny, monkeypatch, tmp_path):
    """--fclk-mhz and --retries become the rtl backend's driver options (the same driver as the board's)."""
    import zynqflow.host.accelerator as A

    made = []

    def make_backend(name, export, **opts):
        made.append((name, opts))
        raise BackendError("stop here")
    monkeypatch.setattr(A, "make_backend", make_backend)
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(tmp_path / "z.png")
    assert cli.main(["stream", str(tmp_path), "--backend", "rtl", "--export", str(tiny), "--fclk-mhz", "62.5",
                     "--retries", "5"]) == 2
    assert made == [("rtl", dict(timeout_s=None, backpressure=0.0, fclk_mhz=62.5, retries=5))]


def test_figure_lines_say_measured_or_modelled():
    from zynqflow.host.cli import figure_lines

    s = dict(backend="rtl", cycles_per_frame=1000, fps_at_100MHz=1e5, cycles_from="measured (RTL twin), RTL simulation",
             dram_rd_bytes_per_frame=4096, dram_wr_bytes_per_frame=512, dram_from="measured (RTL twin)")
    lines = figure_lines(s)
    assert lines == ["cycles per frame 1000 -> 100000.0 frames/s at 100 MHz [measured (RTL twin), RTL simulation]",
                     "DRAM per frame: 4096 bytes read, 512 bytes written [measured (RTL twin)]"]
    s.update(cycles_from="modelled (manifest cycles_model)", dram_rd_bytes_per_frame=None)
    assert figure_lines(s) == ["cycles per frame 1000 -> 100000.0 frames/s at 100 MHz [modelled (manifest "
                               "cycles_model)]"]
    assert figure_lines(dict(backend="golden")) == []


def test_no_devices_found_names_xilinx_xrt(with_bit, tmp_path, monkeypatch, capsys):
    tiny = with_bit
    _fake_board(monkeypatch, "pynq.Overlay(/home/xilinx/x.bit) failed: RuntimeError: No Devices Found")
    monkeypatch.delenv("XILINX_XRT", raising=False)
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(tmp_path / "z.png")
    args = ["classify", str(tmp_path / "z.png"), "--backend", "pynq", "--export", str(tiny)]
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and "No Devices Found" in err
    assert "XILINX_XRT is not set" in err and "export XILINX_XRT=/usr" in err and "~/zynqflow/zynqflow" in err
    monkeypatch.setenv("XILINX_XRT", "/usr")
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "XILINX_XRT=/usr is set" in err and "fpga_manager" in err
    assert M.xrt_hint("x").startswith("x (XILINX_XRT=/usr is set")
    assert "No Devices Found" not in M.xrt_hint()


# ---- --preprocess -----------------------------------------------------------------------------
def test_cli_preprocess_recipe(tmp_path, capsys):
    """A product photo through the CLI: auto (the manifest's Fashion-MNIST recipe) and plain
    classify what the golden model says for the frames each recipe makes."""
    pytest.importorskip("torch")
    from zynqflow.model.data import DatasetError, load_dataset

    try:
        obj = load_dataset("fashion-mnist").test.images[0, 0, 2:30, 2:30]
    except DatasetError as e:
        pytest.skip(f"Fashion-MNIST not available: {e}")
    d, _ = exports.checkpoint_export(exports.REFERENCE_CKPT)
    ex = Export(d)
    big = np.asarray(Image.fromarray(obj).resize((84, 84), Image.BICUBIC), np.float64)
    photo = np.full((150, 130), 245.0)
    photo[10:94, 40:124] = 245.0 * (1 - big / 255)
    f = tmp_path / "photo.png"
    Image.fromarray(np.clip(np.rint(photo), 0, 255).astype(np.uint8)).save(f)
    gold = Accelerator(ex, "golden")
    want = {}
    for recipe in ("auto", "plain"):
        assert cli.main(["classify", str(f), "--export", str(d), "--backend", "golden", "--json", "--top", "1",
                         "--preprocess", recipe]) == 0
        got = json.loads(capsys.readouterr().out)["results"][0]["name"]
        want[recipe] = gold.classify(frames_for(ex, [f], recipe=recipe)).names[0]
        assert got == want[recipe]
    dataset = gold.classify(np.pad(obj, 2)[None, :, :, None]).names[0]
    assert want["auto"] == dataset
    assert not np.array_equal(frames_for(ex, [f]), frames_for(ex, [f], recipe="plain"))
    assert cli.main(["info", "--export", str(d), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["preprocess"]["recipe"] == "fashion-mnist"


# ---- checked before the PL is programmed, before any work (issue 25, point 7) ----------------------
def _fake_pynq(monkeypatch, tmp_path, on_import: str = ""):
    """A pynq that records every Overlay (a download programs the PL), found on sys.path and not yet
    imported, on a machine that looks like a board (an FPGA manager)."""
    import zynqflow.host.board as board

    pkg = tmp_path / "fakepynq" / "pynq"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "import sys\n"
        f"print({on_import!r}, file=sys.stderr, flush=True)\n"
        "OVERLAYS = []\n"
        "class Overlay:\n"
        "    def __init__(self, bit, download=True):\n"
        "        OVERLAYS.append((bit, download))\n"
        "        raise RuntimeError('stop after recording')\n")
    for k in [k for k in sys.modules if k == "pynq" or k.startswith("pynq.")]:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.syspath_prepend(str(pkg.parent))
    (tmp_path / "fpga0").write_text("")
    monkeypatch.setattr(board, "FPGA_MANAGERS", (str(tmp_path / "fpga0"),), raising=False)
    monkeypatch.delenv("ZQ_NO_BOARD", raising=False)


def _forget_fake_pynq():
    for k in [k for k in sys.modules if k == "pynq" or k.startswith("pynq.")]:
        del sys.modules[k]


@pytest.mark.parametrize("case", ["timing record", "hwh clock", "nothing to check against"])
def test_fclk_refused_before_the_pl_is_programmed(with_bit, tmp_path, monkeypatch, capsys, case):
    """--fclk-mhz above what the bitstream's timing record (or its .hwh's clock) allows, or with nothing
    to check it against, is refused before pynq is imported and before any Overlay is downloaded."""
    hwh = with_bit / "zynqnet-tiny_pynq-z2.hwh"
    (with_bit / "zynqnet-tiny_pynq-z2.json").unlink(missing_ok=True)
    if case == "timing record":
        (with_bit / "zynqnet-tiny_pynq-z2.json").write_text(json.dumps({"fclk0_mhz": 100, "wns_ns": 0.4}))
    if case == "hwh clock":
        hwh.write_text('<MODULE><PARAMETER NAME="PCW_FPGA0_PERIPHERAL_FREQMHZ" VALUE="100"/></MODULE>')
    _fake_pynq(monkeypatch, tmp_path, "PYNQ IMPORTED")
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(tmp_path / "z.png")
    try:
        args = ["classify", str(tmp_path / "z.png"), "--backend", "pynq", "--export", str(with_bit)]
        assert cli.main(args + ["--fclk-mhz", "150"]) == 2
        err = capsys.readouterr().err
        assert "fclk0 150 MHz refused before loading zynqnet-tiny_pynq-z2.bit" in err, err
        assert {"timing record": "it meets at most 104.17 MHz", "hwh clock": "at most the design's own 100 MHz",
                "nothing to check against": "no clock can be checked"}[case] in err
        assert "PYNQ IMPORTED" not in err and "pynq" not in sys.modules
        if case != "nothing to check against":            # a clock within the limit goes on to the board
            assert cli.main(args + ["--fclk-mhz", "50"]) == 2
            err = capsys.readouterr().err
            assert "stop after recording" in err and sys.modules["pynq"].OVERLAYS == [(str(with_bit.resolve() /
                                                                                      "zynqnet-tiny_pynq-z2.bit"), True)]
    finally:
        _forget_fake_pynq()


def test_progress_line_before_pynq_is_imported(with_bit, tmp_path, monkeypatch, capsys):
    """On the A9 importing pynq takes seconds: the default backend is found without importing it, and
    the first thing pynq prints comes after the command's "importing pynq" line."""
    _fake_pynq(monkeypatch, tmp_path, "PYNQ IMPORT STARTS")
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(tmp_path / "z.png")
    try:
        assert cli.main(["classify", str(tmp_path / "z.png"), "--export", str(with_bit)]) == 2
        err = capsys.readouterr().err
        assert "zynqflow: importing pynq ..." in err and "PYNQ IMPORT STARTS" in err, err
        assert err.index("zynqflow: importing pynq ...") < err.index("PYNQ IMPORT STARTS")
        assert "stop after recording" in err                  # the default backend was pynq
    finally:
        _forget_fake_pynq()


def test_out_checked_before_any_work(tiny, tmp_path, capsys):
    """benchmark --out: a directory, a missing directory or one that cannot be written is refused
    before any backend runs; a good path gets the table."""
    base = ["benchmark", "--backend", "golden", "--frames", "2", "--export", str(tiny)]
    for out, why in ((tmp_path, "is a directory"), (tmp_path / "no" / "b.json", "no such directory")):
        assert cli.main(base + ["--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"--out {out}: {why}" in err and "streaming" not in err and "opening" not in err, err
    assert cli.main(base + ["--out", str(tmp_path / "b.json")]) == 0
    assert json.loads((tmp_path / "b.json").read_text())["rows"][0]["backend"] == "golden"
