"""``zynqflow doctor`` on a board (issue 25, point 5), as a first bring-up meets it: pynq is a module
over the HLS engine's simulation (``pynq.Overlay`` the C-sim engine behind Vitis's control block with
the AXI DMA model, ``pynq.allocate`` buffers in its DDR, ``pynq.MMIO`` over its registers), the
bitstream (a ``.bit`` with Vivado's header) and the ``.hwh`` (pynq-readable) deployed beside the
export. One thing at a time breaks -- step 0 (not root, no XILINX_XRT, too little CMA), the overlay
load, an allocation (pynq's ``RuntimeError("Allocate failed")``), a stale ``.hwh`` -- and the doctor
prints the whole checklist, the failing step with its fix, on stdout and nothing else there."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import types

import numpy as np
import pytest

from zynqflow.export import fixtures as exports
from zynqflow.host import cli
from zynqflow.host.manifest import Export

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None
                                or importlib.util.find_spec("hls4ml") is None,
                                reason="the board's stand-in is the HLS C simulation: it needs g++ and hls4ml's ap_types")

STEP_NAMES = ("environment", "bitstream and .hwh", "IPs", "register offsets", "DMA status", "clock", "DMA and CMA",
              "network ID", "weight image in DDR", "one frame")


@pytest.fixture(scope="module")
def tiny() -> Export:
    return Export(exports.random_export("zynqnet-tiny", seed=0, vectors=16))


@pytest.fixture(scope="module")
def csim(tiny):
    """One C-sim engine for the module (its build is cached by export directory)."""
    from zynqflow.sim.csim.runner import CSim

    return CSim(tiny.dir)


class Board:
    """The deployed files and the fake pynq; ``fail`` names what pynq does wrong."""

    def __init__(self, tiny, csim, tmp_path, monkeypatch):
        from zynqflow.sim.csim.hls_host import HlsOverlay
        from zynqflow.sim.world.vitis_hwh import write_bitfile
        import zynqflow.host.board as board
        import zynqflow.host.doctor as doctor

        self.dir = tmp_path / "zynqnet-tiny"
        shutil.copytree(tiny.dir, self.dir)
        self.bit = write_bitfile(self.dir / "zynqnet-tiny_pynq-z2.bit")      # 2023/11/27 11:41:05
        csim.reset()
        self.ol = HlsOverlay(Export(self.dir), self.bit.with_suffix(".hwh"), csim=csim)   # writes the .hwh (10:12:33)
        self.fail: dict = {}
        self.downloads = 0
        ol, me = self.ol, self

        def overlay(path, download=True):
            os.write(1, b"INFO: [pynq] what a tool prints on stdout\n")        # must not reach the checklist
            if "load" in me.fail:
                raise me.fail["load"]
            ol.bitfile_name = str(path)
            if download:
                ol.download()
            return ol

        def download():
            me.downloads += 1
            ol.device.pl_reset()
            fake.PL.bitfile_name = ol.bitfile_name
        ol.download = download

        def allocate(shape, dtype=np.uint32, **kw):
            if "allocate" in me.fail:
                raise me.fail["allocate"]
            return ol.allocate(shape=shape, dtype=dtype)

        by_addr = {d["phys_addr"]: n for n, d in ol.ip_dict.items() if "phys_addr" in d}
        fake = types.ModuleType("pynq")
        fake.__version__ = "3.0.1"
        fake.Overlay, fake.allocate = overlay, allocate
        fake.MMIO = lambda addr, size: ol.raw_mmio(by_addr[addr])
        fake.PL = types.SimpleNamespace(bitfile_name=None)
        ps = types.ModuleType("pynq.ps")
        ps.Clocks = ol.clocks
        self.pynq = fake
        monkeypatch.setitem(sys.modules, "pynq", fake)
        monkeypatch.setitem(sys.modules, "pynq.ps", ps)
        monkeypatch.setattr(board, "on_board", lambda: True)
        monkeypatch.setattr(doctor, "_uid", lambda: 0)
        xrt = tmp_path / "xrt"
        xrt.mkdir()
        monkeypatch.setenv("XILINX_XRT", str(xrt))
        meminfo = tmp_path / "meminfo"
        meminfo.write_text("MemTotal:         503212 kB\nCmaTotal:         131072 kB\nCmaFree:          120000 kB\n")
        monkeypatch.setattr(doctor, "MEMINFO", str(meminfo))
        state = tmp_path / "fpga0_state"
        state.write_text("operating\n")
        monkeypatch.setattr(doctor, "FPGA_STATE", str(state))
        self.meminfo = meminfo

    def doctor(self, capfd, *extra) -> tuple[int, list[str], str]:
        rc = cli.main(["doctor", "--backend", "pynq", "--export", str(self.dir), *extra])
        out, err = capfd.readouterr()
        return rc, out.splitlines(), err


@pytest.fixture
def board(tiny, csim, tmp_path, monkeypatch):
    return Board(tiny, csim, tmp_path, monkeypatch)


def _checklist(lines: list[str], failed: int | None, fix: str | None = None) -> None:
    """Every step printed in order: passed below ``failed``, FAILED there with its fix, not run above;
    the summary last; nothing else on stdout."""
    body = [l for l in lines if not l.startswith("      fix: ")]
    fixes = [l for l in lines if l.startswith("      fix: ")]
    assert len(body) == 11, lines
    for i, name in enumerate(STEP_NAMES):
        state = "passed" if failed is None or i < failed else "FAILED" if i == failed else "not run"
        assert body[i].startswith(f"[{i}/9] {name}") and f" {state}" in body[i], (i, lines)
    if failed is None:
        assert body[10] == "zynqflow doctor: all 10 steps passed" and fixes == []
    else:
        assert body[10] == f"zynqflow doctor: step {failed} ({STEP_NAMES[failed]}) failed"
        assert len(fixes) == 1 and lines[lines.index(fixes[0]) - 1] == body[failed] and fix in fixes[0], lines


def test_doctor_passes_on_a_board(board, capfd):
    rc, lines, err = board.doctor(capfd)
    assert rc == 0
    _checklist(lines, None)
    assert "uid 0" in lines[0] and "pynq 3.0.1" in lines[0] and "CmaFree 120000 KiB" in lines[0]
    assert "FPGA manager operating" in lines[0]
    assert "zq_pynq_z2, 7z020clg400, Vivado 2023.2" in lines[1] and "overlay loaded" in lines[1]
    assert "bit-exact with the golden model" in lines[9] and board.downloads == 1
    assert "INFO: [pynq] what a tool prints on stdout" in err and "zynqflow: importing pynq ..." in err


@pytest.mark.parametrize("broken", ["not root", "no XILINX_XRT", "too little CMA", "FPGA manager"])
def test_doctor_step_0(board, capfd, monkeypatch, broken):
    import zynqflow.host.doctor as doctor

    fix = {"not root": "run the zynqflow command", "no XILINX_XRT": "export XILINX_XRT=/usr",
           "too little CMA": "enlarge the CMA area", "FPGA manager": "reboot the board"}[broken]
    if broken == "not root":
        monkeypatch.setattr(doctor, "_uid", lambda: 1000)
    elif broken == "no XILINX_XRT":
        monkeypatch.delenv("XILINX_XRT")
    elif broken == "too little CMA":
        board.meminfo.write_text("CmaTotal:         131072 kB\nCmaFree:              16 kB\n")
    else:
        (board.meminfo.parent / "fpga0_state").write_text("write error\n")
    rc, lines, _ = board.doctor(capfd)
    assert rc == 1
    _checklist(lines, 0, fix)
    assert board.downloads == 0                       # nothing was loaded


@pytest.mark.parametrize("error", [PermissionError(13, "Permission denied", "/dev/mem"),
                                   RuntimeError("Unable to parse metadata")])
def test_doctor_overlay_load_fails_in_step_1(board, capfd, error):
    board.fail["load"] = error
    rc, lines, _ = board.doctor(capfd)
    assert rc == 1
    _checklist(lines, 1, "run as root" if isinstance(error, PermissionError) else "the .hwh cannot be parsed")
    assert "loading the overlay:" in lines[1] and str(error) in lines[1]


def test_doctor_no_download_while_another_bitstream_is_loaded(board, capfd):
    board.pynq.PL.bitfile_name = "/usr/local/share/pynq-venv/lib/python3.10/site-packages/pynq/overlays/base/base.bit"
    rc, lines, _ = board.doctor(capfd, "--no-download")
    assert rc == 1
    _checklist(lines, 1, "")
    assert "--no-download: the PL holds" in lines[1] and "base.bit" in lines[1]


def test_doctor_allocation_failure_is_the_cma_step(board, capfd):
    """pynq's RuntimeError("Allocate failed") (CMA exhausted) fails the DMA and CMA step with its own
    fix, not the network-ID step (which only reads the ID) nor "unexpected RuntimeError"."""
    board.fail["allocate"] = RuntimeError("Allocate failed")
    rc, lines, _ = board.doctor(capfd)
    assert rc == 1
    _checklist(lines, 6, "free the CMA other processes hold")
    assert "CMA) is exhausted" in lines[6] and "unexpected" not in "\n".join(lines)


@pytest.mark.parametrize("case", ["two days older", "newer than the .bit", "another design"])
def test_doctor_pairs_bit_and_hwh_by_content(board, capfd, case):
    """A .hwh from another build (same IPs, so pairing by IP name passes) fails step 1."""
    from zynqflow.sim.csim.runner import ap_types_dir
    from zynqflow.sim.world.vitis_hwh import hls_control_registers, write_hwh, write_bitfile

    if case == "two days older":
        write_bitfile(board.bit, date="2023/11/29")
        want = "stale zynqnet-tiny_pynq-z2.hwh"
    elif case == "newer than the .bit":
        write_hwh(board.bit.with_suffix(".hwh"), hls_control_registers(board.dir, ap_types_dir()), timestamp="Mon Nov 27 12:00:00 2023")
        want = "is newer than zynqnet-tiny_pynq-z2.bit"
    else:
        write_bitfile(board.bit, design="base_wrapper")
        want = "is design base_wrapper"
    rc, lines, _ = board.doctor(capfd)
    assert rc == 1
    _checklist(lines, 1, "copy the .bit and the .hwh of one build together")
    assert want in lines[1] and board.downloads == 0


def test_doctor_reads_the_dma_status_before_the_download(board, capfd):
    """The PL holds this bitstream and an earlier process left the DMA halted with an error: the
    download resets it (so step 4 passes), and step 4 says what it found before."""
    board.pynq.PL.bitfile_name = str(board.bit)
    board.ol.device.dma.set_error_state("s2mm")
    rc, lines, _ = board.doctor(capfd)
    assert rc == 0
    _checklist(lines, None)
    assert "before the download the DMA was halted with an error" in lines[4] and "DMASlvErr" in lines[4]


def test_bit_header_as_pynq_reads_it(tmp_path):
    from zynqflow.host.doctor import bit_header
    from zynqflow.sim.world.vitis_hwh import write_bitfile

    bit = write_bitfile(tmp_path / "x.bit", date="2024/01/02", time="03:04:05")
    assert bit_header(bit) == dict(design="zq_pynq_z2_wrapper", version="2023.2", part="7z020clg400",
                                   date="2024/01/02", time="03:04:05")
    pytest.importorskip("pynq")
    from pynq.pl_server.embedded_device import parse_bit_header

    d = parse_bit_header(bit.read_bytes())
    assert (d["design"], d["part"], d["date"], d["time"], d["version"]) == (
        "zq_pynq_z2_wrapper", "7z020clg400", "2024/01/02", "03:04:05", "Version=2023.2")
    (tmp_path / "y.bit").write_bytes(b"\0")
    with pytest.raises(ValueError, match="not a Xilinx bitstream"):
        bit_header(tmp_path / "y.bit")
