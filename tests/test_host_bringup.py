"""First bring-up, second pass (issue 19): what a PYNQ-Z2 would still trip on, each against a
shim that behaves as pynq 3.x and the board do (the clock_dict pynq 3.0.1 builds, completion-only
interrupts, DMA errors mid-packet, a soft reset that takes its time, freed buffer addresses handed
out again), the CLI before the PL, and ``zynqflow doctor``."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from PIL import Image

from zynqflow.export import fixtures as exports
from zynqflow.host import BackendError, ClockError, cli
from zynqflow.host.board import Platform, open_driver
from zynqflow.host.manifest import Export
from zynqflow.spec.golden import golden_logits

from test_host import FakeAllocator, FakeMMIO, FakeOverlay   # noqa: E402 - the driver's unit fakes


@pytest.fixture(scope="module")
def tiny_ex() -> Export:
    return Export(exports.random_export("zynqnet-tiny", seed=0, vectors=16))


class Pynq3Clocks:
    """pynq.ps.Clocks on a PYNQ-Z2: fclk0_mhz as the bitstream set it (100 MHz), writable."""

    def __init__(self, mhz=100.0):
        self.fclk0_mhz = mhz


def _pynq3_overlay(mmio, with_ps_parameters: bool):
    """What pynq 3.0.1 gives: clock_dict {i: {enable, divisor0, divisor1}} (no frequency); the PS's
    .hwh parameters in ip_dict (PCW_FPGA0_PERIPHERAL_FREQMHZ)."""
    ol = FakeOverlay(mmio)
    ol.clock_dict = {0: {"enable": 1, "divisor0": 10, "divisor1": 1}, 1: {"enable": 0, "divisor0": 10, "divisor1": 1},
                     2: {"enable": 0, "divisor0": 10, "divisor1": 1}, 3: {"enable": 0, "divisor0": 10, "divisor1": 1}}
    if with_ps_parameters:
        ol.ip_dict["processing_system7_0"]["parameters"] = {"PCW_FPGA0_PERIPHERAL_FREQMHZ": "100"}
    return ol


# ---- 1. the PL-clock limit with pynq 3.x's clock_dict -------------------------------------------
@pytest.mark.parametrize("ps_parameters", [True, False])
def test_clock_limit_with_pynq3_clock_dict(tiny_ex, ps_parameters):
    """No timing .json beside the bitstream: --fclk-mhz 250 must be refused (the design's own clock
    from the .hwh, else the clock loaded now), never accepted as "not checked"."""
    ol = _pynq3_overlay(FakeMMIO(tiny_ex, tiny_ex.network_id), ps_parameters)
    clocks = Pynq3Clocks(100)
    with pytest.raises(ClockError, match=r"fclk0 250 MHz refused: no timing record .*100 MHz") as e:
        open_driver(tiny_ex, ol, platform=Platform(allocate=FakeAllocator(), clocks=clocks), fclk_mhz=250)
    assert clocks.fclk0_mhz == 100
    assert ("design's own 100 MHz" in str(e.value)) == ps_parameters
    drv = open_driver(tiny_ex, ol, platform=Platform(allocate=FakeAllocator(), clocks=clocks), fclk_mhz=50)
    assert drv.fclk_hz == 50e6 and drv.clock_info["limit_mhz"] == 100
    drv.close()


# ---- 5. --no-download while the base overlay is loaded ---------------------------------------------
def test_no_download_with_another_bitstream_loaded(tiny_ex, tmp_path, monkeypatch, capsys):
    """pynq 3.0.1: Overlay(bit, download=False) with another bitstream in the PL builds, then its first
    IP access raises RuntimeError('Overlay not currently loaded'). The CLI says what is loaded and
    what to do (exit 2), no traceback."""
    import zynqflow.host.board as board

    ex_dir = tmp_path / "ex"
    import shutil

    shutil.copytree(tiny_ex.dir, ex_dir)
    (ex_dir / "zynqnet-tiny_pynq-z2.bit").write_bytes(b"\0")
    (ex_dir / "zynqnet-tiny_pynq-z2.hwh").write_text("<hwh/>")

    class NotLoaded(FakeOverlay):
        def __init__(self, bitfile, download=True):
            super().__init__(FakeMMIO(tiny_ex, tiny_ex.network_id))
            del self.zq_top_0, self.axi_dma_0
            self.bitfile_name = bitfile

        def __getattr__(self, name):
            raise RuntimeError("Overlay not currently loaded")

    fake = types.ModuleType("pynq")
    fake.Overlay, fake.allocate = NotLoaded, FakeAllocator()
    fake.MMIO = lambda addr, size: FakeMMIO(tiny_ex, tiny_ex.network_id)
    fake.PL = types.SimpleNamespace(bitfile_name="/usr/local/share/pynq-venv/lib/python3.10/site-packages/"
                                                 "pynq/overlays/base/base.bit")
    ps = types.ModuleType("pynq.ps")
    ps.Clocks = Pynq3Clocks(100)
    monkeypatch.setitem(sys.modules, "pynq", fake)
    monkeypatch.setitem(sys.modules, "pynq.ps", ps)
    monkeypatch.setattr(board, "on_board", lambda: True)
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(tmp_path / "z.png")
    args = ["classify", str(tmp_path / "z.png"), "--backend", "pynq", "--export", str(ex_dir), "--no-download"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--no-download: the PL holds" in err and "base.bit" in err
    assert "drop --no-download" in err
    assert "zynqflow: importing pynq ..." in err                  # a progress line for each slow step on the A9
    # pynq cannot tell what is loaded: the first IP access's RuntimeError is named just the same
    fake.PL = types.SimpleNamespace()
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "Overlay not currently loaded" in err and "drop --no-download" in err and "Traceback" not in err
    assert "zynqflow: opening the loaded bitstream zynqnet-tiny_pynq-z2.bit and parsing its .hwh" in err


# ---- 6. the CLI: inputs before the PL, progress, --debug ----------------------------------------------
def test_cli_checks_every_input_before_the_pl(tiny_ex, tmp_path, monkeypatch, capsys):
    """A typo in an image path, an unreadable image, a missing bitstream: named, exit 2, and the
    board never opened (no bitstream loaded, no weight image written)."""
    import zynqflow.host.board as board

    opened = []
    monkeypatch.setattr(board, "open_driver", lambda *a, **k: opened.append(a) or (_ for _ in ()).throw(
        BackendError("opened")))
    import shutil

    ex_dir = tmp_path / "ex"
    shutil.copytree(tiny_ex.dir, ex_dir)
    (ex_dir / "zynqnet-tiny_pynq-z2.bit").write_bytes(b"\0")
    (ex_dir / "zynqnet-tiny_pynq-z2.hwh").write_text("<hwh/>")
    Image.fromarray(np.zeros((16, 16), np.uint8)).save(tmp_path / "good.png")
    (tmp_path / "bad.png").write_bytes(b"not a png")
    base = ["--backend", "pynq", "--export", str(ex_dir)]
    for args, named in ((["classify", str(tmp_path / "good.png"), str(tmp_path / "typo.png")], "typo.png"),
                        (["classify", str(tmp_path / "good.png"), str(tmp_path / "bad.png")], "bad.png"),
                        (["stream", str(tmp_path / "*.jpg")], "*.jpg"),
                        (["classify", str(tmp_path / "good.png"), "--bit", str(tmp_path / "nope.bit")], "nope.bit")):
        assert cli.main(args + base) == 2, args
        err = capsys.readouterr().err
        assert named in err and "Traceback" not in err, err
    assert opened == []
    assert cli.main(["classify", str(tmp_path / "good.png")] + base) == 2
    assert "opened" in capsys.readouterr().err and len(opened) == 1


def test_cli_progress_and_debug(tiny_ex, tmp_path, monkeypatch, capsys):
    for i in range(12):
        Image.fromarray(np.full((16, 16), 20 * i, np.uint8)).save(tmp_path / f"f{i:02d}.png")
    assert cli.main(["stream", str(tmp_path), "--backend", "golden", "--export", str(tiny_ex.dir)]) == 0
    err = capsys.readouterr().err
    assert "zynqflow: preprocessing 12 images [" in err and "12/12" in err
    assert "zynqflow: opening the golden backend ..." in err and "zynqflow: streaming 12 frames on golden: done (" in err
    # an error we did not name: one line without --debug, the traceback with it (or ZYNQFLOW_DEBUG=1)
    import zynqflow.host.accelerator as A

    def broken(*a, **k):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(A.GoldenBackend, "classify", broken)
    args = ["classify", str(tmp_path / "f00.png"), "--backend", "golden", "--export", str(tiny_ex.dir)]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "unexpected ZeroDivisionError" in err and "--debug" in err and "Traceback" not in err
    assert cli.main(args + ["--debug"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err
    monkeypatch.setenv("ZYNQFLOW_DEBUG", "1")
    assert cli.main(args) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_import_hook(monkeypatch, capsys):
    """The agreed ``zynqflow import`` hook: the importer's main(argv) with the remaining arguments;
    without the extra, a message naming zynqflow[import]."""
    mod = types.ModuleType("zynqflow.export.qonnx_import")
    got = []
    mod.main = lambda argv: got.append(argv) or 0
    monkeypatch.setitem(sys.modules, "zynqflow.export.qonnx_import", mod)
    assert cli.main(["import", "model.onnx", "--out", "x"]) == 0 and got == [["model.onnx", "--out", "x"]]
    monkeypatch.setitem(sys.modules, "zynqflow.export.qonnx_import", None)
    assert cli.main(["import", "model.onnx"]) == 2
    assert "zynqflow[import]" in capsys.readouterr().err


# ---- through the shim (the RTL under Verilator) ---------------------------------------------------
try:
    from zynqflow.sim.rtl.host_job import run_job
    from test_host_rtl import tiny, tiny_frames  # noqa: F401 - the built zynqnet-tiny export and its frames
    HAVE_SIM = True
except Exception:  # noqa: BLE001 - no simulator here: the shim tests skip
    HAVE_SIM = False
needs_sim = pytest.mark.skipif(not HAVE_SIM, reason="zynqflow.sim (cocotb, Verilator) unavailable")


@needs_sim
def test_ctrl_c_mid_stream_then_reopen(tiny, tiny_frames):
    """7. Ctrl-C while a stream has an S2MM transfer posted, then a new process on the loaded
    bitstream (--no-download). close() resets the DMA (and drains the engine) before it frees the
    buffers, which allocate() hands out again: no stray DMA write lands in the new process's weight
    image or frames; the new open drains the busy engine before it allocates anything."""
    f = tiny_frames
    gold = golden_logits(tiny.qnet(), f)
    res = run_job(tiny, [("stream", f[:8]), ("reopen", None), ("classify", f[8:12]), ("stream", f[12:20])],
                  sim=dict(faults=[dict(channel="mm2s", transfer=3, kind="sigint")]))
    assert res["error"] is None
    s = res["steps"]
    assert s[0]["error"]["type"] == "KeyboardInterrupt" and s[0]["close_note"] == "recovered before freeing the buffers"
    assert np.array_equal(s[2]["logits"], gold[8:12]) and np.array_equal(s[3]["logits"], gold[12:20])
    # the freed addresses were handed out again: the second driver's weight image sits where the first's did
    allocs = [a for a in res["alloc_log"] if a[0] == "alloc"]
    w = tiny.weight_image_bytes
    first_w = next(a for a in allocs if a[2] == w)
    assert sum(1 for a in allocs if a[1] == first_w[1] and a[2] == w) == 2
    # no DMA write landed in a freed buffer (the posted S2MM was dropped by close()'s reset)
    assert res["dma"]["stray_writes"] == [] and res["dma"]["resets"] >= 1 and res["extra_output_frames"] == 0
    assert s[3]["recoveries"] == [] and s[2]["recoveries"] == []


@needs_sim
def test_busy_engine_on_open_drained_before_allocation(tiny, tiny_frames):
    """A process killed mid-stream (no close: SIGKILL) leaves the DMA mid-transfer and the engine
    busy; the next open (--no-download) resets the DMA and drains the engine before it allocates
    the weight image (nothing of the old process's stream can reach the new buffers)."""
    f = tiny_frames
    gold = golden_logits(tiny.qnet(), f)
    res = run_job(tiny, [("stream", f[:6]), ("classify", f[6:10])],
                  sim=dict(faults=[dict(channel="mm2s", transfer=3, kind="sigint")], kill_on_sigint=True))
    assert res["error"] is None
    s = res["steps"]
    assert s[0]["error"]["type"] == "KeyboardInterrupt" and s[0]["close_note"] is None       # killed, not closed
    log = res["open_log"][1]
    assert log[:2] == ["DMA reset (left halted or mid-transfer)", "engine drained"], log
    assert log.index("engine drained") < log.index("engine memory allocated")
    assert np.array_equal(s[1]["logits"], gold[6:10]) and res["extra_output_frames"] == 0


@needs_sim
def test_dma_error_wakes_the_asyncio_wait(tiny, tiny_frames):
    """8. pynq enables only the completion interrupt: an S2MM error raises no interrupt, and an
    asyncio wait would sit until its timeout (1 s on the board; here the shim's wait gives up after
    IRQ_WAIT_CYCLES and counts it). The driver enables Err_IrqEn: the error wakes the wait at once."""
    from zynqflow.sim.world.pynq_shim import IRQ_WAIT_CYCLES

    f = tiny_frames
    res = run_job(tiny, [("stream_async", f[:8])], sim=dict(faults=[dict(channel="s2mm", transfer=3, kind="slave")]),
                  timeout_s=50 * tiny.frame_cycles() / 1e8)
    assert res["error"] is None
    s = res["steps"][0]
    assert np.array_equal(s["logits"], golden_logits(tiny.qnet(), f[:8]))
    rec = s["recoveries"][0]
    assert "DMASlvErr" in rec["reason"]
    delay_cycles = (rec["t"] * 1e9 - res["dma_errors_ns"]["s2mm"]) / 10
    assert 0 <= delay_cycles < IRQ_WAIT_CYCLES / 10, delay_cycles
    assert res["interrupts"]["s2mm"]["timeouts"] == 0 and res["interrupts"]["s2mm"]["fired"] >= 8


@needs_sim
def test_s2mm_error_mid_packet_and_a_slow_reset(tiny, tiny_frames):
    """9. The S2MM channel halts after 3 beats of the engine's output (the engine keeps the rest of
    its frame, TVALID high, TREADY low) and the soft reset takes 2000 cycles: the driver waits for
    DMACR.Reset, drains the rest of the packet and re-sends; every result golden, in order."""
    f = tiny_frames
    res = run_job(tiny, [("stream", f[:10]), ("classify", f[10:13])],
                  sim=dict(faults=[dict(channel="s2mm", transfer=4, kind="slave", beats=3)],
                           dma=dict(busy_reset_cycles=2000)), timeout_s=50 * tiny.frame_cycles() / 1e8)
    assert res["error"] is None and res["extra_output_frames"] == 0
    s1, s2 = res["steps"]
    gold = golden_logits(tiny.qnet(), f[:13])
    assert np.array_equal(s1["logits"], gold[:10]) and np.array_equal(s2["logits"], gold[10:13])
    rec = s1["recoveries"][0]
    assert rec["frame"] == 4 and rec["dmasr_s2mm"] & 0x21 == 0x21 and rec["drained"] >= 1
    assert res["dma"]["resets"] == 1 and res["dma"]["s2mm_errors"] == 1
    assert res["dma"]["mid_packet"] == [3]                       # halted with 3 of the frame's beats taken
    # the driver waited for the reset: frame 4 went out again only after the 2000 cycles it took
    assert (s1["t_send"][4] - rec["t"]) * 1e8 >= 2000


# ---- zynqflow doctor -----------------------------------------------------------------------------
@needs_sim
def test_doctor_passes_against_the_rtl(tiny, capfd):
    """Every step passes against the RTL simulation; stdout holds the checklist and nothing else (the
    simulator's build and run output, if any, goes to stderr)."""
    from zynqflow.host.doctor import STEPS

    assert cli.main(["doctor", "--backend", "rtl", "--export", str(tiny.dir)]) == 0
    out = capfd.readouterr().out
    lines = out.splitlines()
    for i, name in enumerate(STEPS):
        assert lines[i].startswith(f"[{i}/9] {name}") and " passed" in lines[i], out
    assert lines[10:] == ["zynqflow doctor: all 10 steps passed"], out
    assert "bit-exact with the golden model" in out


def _other_network(ex: Export, dest):
    from test_host_rtl import _other_network as other

    return other(ex, dest)


@needs_sim
@pytest.mark.parametrize("layer", ["missing IP", "wrong offset", "halted DMA", "wrong network ID"])
def test_doctor_names_the_broken_layer(tiny, tmp_path, layer):
    """One layer broken at a time: the doctor fails exactly that step, with the fix, and runs nothing
    above it."""
    from zynqflow.host.registers import RegMap

    kw, want = {}, {"missing IP": 2, "wrong offset": 3, "halted DMA": 4, "wrong network ID": 7}[layer]
    if layer == "missing IP":
        kw = dict(sim=dict(omit_ips=["axi_dma_0"]))
    elif layer == "wrong offset":
        kw = dict(sim=dict(registers={"net_id": RegMap("rtl")["net_id"] + 0x20}))
    elif layer == "halted DMA":
        kw = dict(sim=dict(dma_state="error"))
    else:
        _other_network(tiny, tmp_path / "other")
        kw = dict(driver_export=tmp_path / "other")
    res = run_job(tiny, [("doctor", None)], **kw)
    checks = res["doctor"]
    assert [c["ok"] for c in checks] == [True] * want + [False] + [None] * (9 - want), checks
    bad = checks[want]
    assert bad["fix"]
    text = {2: "AXI DMA", 3: "net_id at 0x48", 4: "DMASlvErr", 7: "network ID mismatch"}[want]
    assert text in bad["detail"], bad
    assert res["mm2s_transfers"] == 0            # nothing was sent to a broken design
