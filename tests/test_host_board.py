"""What only a PYNQ-Z2 would show, checked here through the PYNQ shim made to behave as the
hardware does (zynqflow.sim.world.pynq_shim: pynq's own DMA channel driver on a PG021 register
model of the AXI DMA, the RTL of the engine under Verilator):

* register offsets (the engine specification's) compared with the ``.hwh`` on open;
* the weight image and the DDR buffers checked on open, before any register access;
* the AXI DMA after an error (halted until a soft reset) and after a timeout (busy):
  pynq's RuntimeErrors, as host errors; a DMA left in error by an earlier process;
* interrupts (axi_intc in board/pynq_z2.tcl; the driver's asyncio methods);
* the PL clock: read, set, refused above what the design's timing met;
* ZqOverlay (a pynq.Overlay subclass, built lazily) and its simulated stand-in;
* board/deploy.sh installs the notebooks and the bitstream's timing record.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from zynqflow.export import fixtures as exports
from zynqflow.host import ClockError, DdrBufferError, RegisterMapMismatch, WeightImageError
from zynqflow.host.board import configure_fclk, max_fclk_mhz
from zynqflow.host.dma import decode_dmasr
from zynqflow.host.registers import RegMap, check_register_offsets, engine_from_hwh
from zynqflow.host.stats import driver_info, throughput
from zynqflow.host.manifest import REPO, Export
from zynqflow.spec import engine as E
from zynqflow.spec.golden import golden_logits

try:
    from zynqflow.sim.rtl.host_job import run_job
    from zynqflow.sim.world.pynq_shim import vitis_hwh_registers, zynq_fclk
except ImportError as e:  # pragma: no cover
    pytest.skip(f"zynqflow.sim unavailable: {e}", allow_module_level=True)

from test_host_rtl import tiny  # noqa: E402,F401 - the built zynqnet-tiny export (a shared fixture)


@pytest.fixture(scope="module")
def frames(tiny) -> np.ndarray:
    vec, _ = tiny.vectors()
    return vec


# ---- register offsets ------------------------------------------------------------------
def test_register_offsets_against_hwh(tiny):
    for engine in ("hls", "rtl"):
        rm = RegMap(engine)
        offsets = dict(rm.offsets)
        hwh = vitis_hwh_registers(offsets)           # as pynq reads a Vitis HLS .hwh: CTRL, GIER, wts_1, ...
        assert "CTRL" in hwh and "AP_CTRL" not in hwh and "wts_1" in hwh and "wts_2" in hwh and "act_2" in hwh
        assert engine_from_hwh(hwh) == engine and engine_from_hwh(None) is None
        got = check_register_offsets(offsets, hwh, ip="zq_top_0", regmap_source=rm.source, hwh_source="x.hwh")
        assert got == offsets                        # every register compared: AP_CTRL as CTRL, wts_hi as wts_2
    # the 64-bit arguments as Vitis names them: <name>_1 (low word), <name>_2 (high word)
    assert check_register_offsets({"AP_CTRL": 0, "wts": 0x10, "wts_hi": 0x14},
                                  {"CTRL": dict(address_offset=0), "wts_1": dict(address_offset=0x10),
                                   "wts_2": dict(address_offset=0x14)}) == {"AP_CTRL": 0, "wts": 0x10, "wts_hi": 0x14}
    with pytest.raises(RegisterMapMismatch, match=r"act_hi at 0x20 in .* but 'act_2' at 0x24"):
        check_register_offsets({"act": 0x1C, "act_hi": 0x20}, {"act_1": dict(address_offset=0x1C),
                                                              "act_2": dict(address_offset=0x24)})
    # one register moved: named with both offsets and both sources
    moved = dict(hwh)
    moved["status"] = dict(moved["status"], address_offset=0x18)
    with pytest.raises(RegisterMapMismatch) as e:
        check_register_offsets(offsets, moved, ip="zq_top_0", regmap_source=rm.source, hwh_source="x.hwh")
    msg = str(e.value)
    assert f"status at 0x{offsets['status']:02x} in {rm.source} but 'status' at 0x18 in x.hwh" in msg
    assert "No register was written" in msg and "engine specification" in msg
    # no register information: skipped quietly; nothing in common: refused
    assert check_register_offsets(offsets, None) == {} and check_register_offsets(offsets, {}) == {}
    with pytest.raises(RegisterMapMismatch, match="none of the registers"):
        check_register_offsets(offsets, {"GPIO_DATA": dict(address_offset=0)})


def test_register_mismatch_on_open_through_shim(tiny, frames):
    """The overlay's .hwh says net_id is elsewhere: open fails before any register access or DMA."""
    rm = RegMap("rtl")
    with pytest.raises(RegisterMapMismatch) as e:
        run_job(tiny, [("classify", frames[:1])], sim=dict(registers={"net_id": rm["net_id"] + 0x20}))
    msg = str(e.value)
    assert f"net_id at 0x{rm['net_id']:02x}" in msg and f"at 0x{rm['net_id'] + 0x20:02x} in the .hwh" in msg
    s = e.value.sim_summary
    assert s["mmio_reads"] == 0 and s["mmio_writes"] == 0 and s["mm2s_transfers"] == 0
    assert s["dma"]["channel_class"] is None          # the DMA driver was never built


def test_weight_image_and_ddr_buffers_on_open_through_shim(tiny, frames, tmp_path):
    """A weights.bin of another export (its header's network ID), and an allocate() whose buffers
    lie past the engine's 512 MiB window: open fails, naming the file / the buffer, before any
    register of the engine is read or written."""
    other = tmp_path / "ex"
    shutil.copytree(tiny.dir, other)
    img = bytearray((other / "weights.bin").read_bytes())
    img[8] ^= 0xFF
    (other / "weights.bin").write_bytes(bytes(img))
    with pytest.raises(WeightImageError) as e:
        run_job(tiny, [("classify", frames[:1])], driver_export=other)
    assert f"{other / 'weights.bin'}: header field net_id" in str(e.value)
    s = e.value.sim_summary
    assert s["mmio_reads"] == s["mmio_writes"] == 0 and s["dma"]["channel_class"] is None
    with pytest.raises(DdrBufferError) as e:
        run_job(tiny, [("classify", frames[:1])], sim=dict(alloc=dict(base=E.DDR_WINDOW_BYTES)),
                driver=dict(open_reset=False))
    assert "weight image (m_axi_wts) buffer" in str(e.value) and "past the engine's DDR window" in str(e.value)
    s = e.value.sim_summary
    assert s["mmio_reads"] == s["mmio_writes"] == 0 and s["mm2s_transfers"] == 0


# ---- the DMA as the hardware behaves, without recovery -----------------------------------
@pytest.mark.parametrize("pynq_dma,kind", [(True, "stall"), (False, "stall"), (False, "internal")])
def test_dma_without_recovery_is_as_harsh_as_the_board(tiny, frames, pynq_dma, kind):
    """recover=False: after an S2MM error the channel stays halted and pynq's transfer() refuses
    ("DMA channel not started"); after a timeout it stays busy ("DMA channel not idle"). Both
    arrive as DmaError with the DMA status. pynq's own channel driver, and the shim's port of it
    (for machines without pynq), behave the same."""
    faults = [dict(channel="s2mm", transfer=1, kind=kind)]
    res = run_job(tiny, [("stream", frames[:4]), ("classify", frames[4:6])], continue_on_error=True,
                  sim=dict(faults=faults, pynq_dma=pynq_dma, registers="none"),
                  driver=dict(recover=False), timeout_s=10 * tiny.frame_cycles() / 1e8)
    first, second = (s["error"] for s in res["steps"])
    have_pynq = importlib.util.find_spec("pynq") is not None
    assert res["dma"]["channel_class"] == ("pynq.lib.dma._SDMAChannel" if pynq_dma and have_pynq else
                                           "zynqflow.sim.world.pynq_shim.SimDMAChannel")
    assert res["registers_checked"] == {}              # no register information: not compared
    if kind == "stall":
        assert first["type"] == "AcceleratorTimeout" and "S2MM (output) transfer of frame 1" in first["message"]
        sr = int(re.search(r"; DMASR=0x([0-9a-f]{8})", first["message"]).group(1), 16)
        assert sr & 0x73 == 0                         # running (not Halted), not Idle, no error: busy
        assert second["type"] == "DmaError" and "pynq: DMA channel not idle" in second["message"]
    else:
        assert first["type"] == "DmaError" and "S2MM (output) error at frame 1" in first["message"]
        assert first["attrs"]["dmasr"] & 0x11 == 0x11 and "Halted DMAIntErr" in first["message"]
        assert second["type"] == "DmaError" and "pynq: DMA channel not started" in second["message"]
        assert "Halted DMAIntErr" in second["message"]
    # pynq refused before writing; the one reset is close()'s: a transfer was still posted, and the
    # buffers are freed only after the DMA has dropped it
    assert res["dma"]["resets"] == 1 and res["dma"]["ignored_writes"] == 0


def test_decode_dmasr():
    assert decode_dmasr(0x00014041) == "DMASR=0x00014041 (Halted DMADecErr Err_Irq)"
    assert decode_dmasr(0x00011002) == "DMASR=0x00011002 (Idle IOC_Irq)"


# ---- open after a crash, interrupts, the clock ------------------------------------------------
def test_open_after_dma_error_interrupts_and_clock(tiny, frames, tmp_path):
    """The DMA was left halted with an error (an earlier process, no bitstream reload): the
    driver soft-resets it on open, before pynq's DMA driver would wait for ever to start it.
    The PL clock is set to 50 MHz (the timing record allows 83 MHz) and the simulation runs
    at it. The asyncio methods wait on the interrupts: the engine's (classify) and the DMA's
    (stream), wired as through the axi_intc."""
    timing = tmp_path / "zynqnet-tiny_pynq-z2.json"
    timing.write_text(json.dumps({"network": "zynqnet-tiny", "fclk0_mhz": 100, "wns_ns": -2.0}))
    gold = golden_logits(tiny.qnet(), frames)
    res = run_job(tiny, [("classify_async", frames[:3]), ("stream_async", frames)],
                  sim=dict(dma_state="error"), driver=dict(fclk_mhz=50, timing=str(timing)))
    assert res["error"] is None and res["extra_output_frames"] == 0
    c, s = res["steps"]
    assert np.array_equal(c["logits"], gold[:3]) and np.array_equal(s["logits"], gold)
    # the open: DMASR of S2MM had DMASlvErr + Halted; one reset, nothing drained (engine idle)
    assert res["open_reset"]["dmasr_s2mm"] & 0x21 == 0x21 and res["dma"]["resets"] == 1
    assert c["recoveries"] == [] and s["recoveries"] == []
    # interrupts: the engine's ap_done line woke each classify frame, the S2MM one each stream frame
    assert res["has_interrupts"] and c["interrupts"] and s["interrupts"]
    assert res["interrupts"]["accel"]["fired"] >= 3 and res["interrupts"]["s2mm"]["fired"] >= len(frames)
    # the clock: 50 MHz set, checked against 1000 / (10 - (-2.0)) = 83.3 MHz, and simulated at it
    assert res["fclk_mhz"] == 50 and res["fclk_set"]["limit_mhz"] == pytest.approx(1e3 / 12)
    cyc = s["cycles_last"][-1]
    fps = len(frames) / s["sim_seconds"]
    assert 0.9 * 50e6 / cyc <= fps <= 50e6 / cyc * 1.0001


def test_fclk_refused_above_timing_through_shim(tiny, frames, tmp_path):
    timing = tmp_path / "t.json"
    timing.write_text(json.dumps({"fclk0_mhz": 100, "wns_ns": 0.5}))
    with pytest.raises(ClockError) as e:
        run_job(tiny, [("classify", frames[:1])], driver=dict(fclk_mhz=125, timing=str(timing)))
    assert "125 MHz refused" in str(e.value) and "105.26 MHz" in str(e.value) and str(timing) in str(e.value)
    assert e.value.sim_summary["mm2s_transfers"] == 0


class FakeClocks:
    """pynq.ps.Clocks' fclk0_mhz: set through the Zynq's two divisors of the 1000 MHz IO PLL."""

    def __init__(self, mhz=100.0):
        self.mhz, self.sets = mhz, []

    @property
    def fclk0_mhz(self):
        return self.mhz

    @fclk0_mhz.setter
    def fclk0_mhz(self, v):
        self.sets.append(v)
        self.mhz = zynq_fclk(v)[0]


def test_configure_fclk_checks(tmp_path):
    assert max_fclk_mhz(100, 1.2) == pytest.approx(1e3 / 8.8)
    # read only: the clock the overlay set
    assert configure_fclk(FakeClocks(100), design_mhz=100)["fclk_mhz"] == 100
    # set below the limit: the divisors give 111.1 MHz for 110
    t = dict(fclk0_mhz=100, wns_ns=1.2)
    clk = FakeClocks(100)
    assert configure_fclk(clk, 110, timing=t)["fclk_mhz"] == pytest.approx(1e3 / 9)
    # above the limit: refused before anything is written
    clk = FakeClocks(100)
    with pytest.raises(ClockError, match=r"fclk0 120 MHz refused: .*100 MHz with a worst setup slack of 1.2 ns.*113.64"):
        configure_fclk(clk, 120, timing=t)
    assert clk.sets == [] and clk.mhz == 100
    # asked for 119 (limit 120), but the nearest divisor gives 125: refused, the old clock restored
    t = dict(fclk0_mhz=100, wns_ns=10 - 1e3 / 120)
    clk = FakeClocks(100)
    with pytest.raises(ClockError, match=r"fclk0 is 125 MHz \(asked for 119 MHz\), above the limit"):
        configure_fclk(clk, 119, timing=t)
    assert clk.sets == [119, 100] and clk.mhz == 100
    # no timing record (or one without numbers): at most the design's own clock
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"fclk0_mhz": 100, "wns_ns": "unknown"}))
    with pytest.raises(ClockError, match=r"no timing record \(.*b.json \(no numeric.*at most the design's own 100 MHz"):
        configure_fclk(FakeClocks(100), 110, timing=bad, design_mhz=100)
    assert configure_fclk(FakeClocks(100), 50, timing=tmp_path / "none.json", design_mhz=100)["fclk_mhz"] == 50
    # a design that missed timing at its own clock: refused as loaded, naming both numbers
    with pytest.raises(ClockError, match=r"fclk0 is 100 MHz, above the limit: .*-0.5 ns, it meets at most 95.24 MHz"):
        configure_fclk(FakeClocks(100), timing=dict(fclk0_mhz=100, wns_ns=-0.5))
    with pytest.raises(ClockError, match="positive"):
        configure_fclk(FakeClocks(100), 0, design_mhz=100)


def test_throughput_figures(tiny):
    sim = throughput(10, 0.001, 1e-4, 1024, 40, 100e6, 5000, simulated=True)
    assert sim["fps_accelerator_only"] == pytest.approx(1e4) and sim["fps_including_host"] == pytest.approx(5e3)
    assert sim["input_MBps_accelerator_only"] == pytest.approx(10.24)
    assert sim["output_MBps_including_host"] == pytest.approx(0.2)
    board = throughput(10, 0.002, 1e-4, 1024, 40, 100e6, 5000, simulated=False)
    assert board["fps_including_host"] == pytest.approx(5e3) and board["fps_accelerator_only"] == pytest.approx(2e4)
    assert "cycles_last" in board["accelerator_only_from"] and "wall time" in board["including_host_from"]
    assert "measured (RTL twin)" in board["accelerator_only_from"]
    # the HLS engine on a board: no cycle counter, the manifest's cycle model, labelled modelled
    hls = throughput(10, 0.002, 1e-4, 1024, 40, 100e6, None, simulated=False, modelled_cycles=4000)
    assert hls["fps_accelerator_only"] == pytest.approx(2.5e4) and "modelled" in hls["accelerator_only_from"]
    steps = dict(cycles_last=[None], dram_rd_bytes=[None], dram_wr_bytes=[None], engine="hls", logits=[[0]] * 10,
                 seconds=0.002, host=dict(host_seconds_per_frame=1e-4))
    info = driver_info(steps, 100e6, 1024, 40, simulated=False, model=tiny.cycles_model)
    assert info["cycles_last"] is None and info["cycles_per_frame"] == tiny.cycles_model["cycles"]
    assert info["cycles_from"].startswith("modelled (manifest cycles_model") and info["dram_from"] is None
    assert info["fps_at_100MHz_from_cycles_last"] is None and info["fps_at_100MHz"] == pytest.approx(
        1e8 / tiny.cycles_model["cycles"])
    assert "modelled" in info["throughput"]["accelerator_only_from"]
    # the HLS engine's figures come from its own cycle model (spec.cycles_hls), the RTL twin's from spec.cycles
    assert tiny.cycles_model_for("hls") == tiny.manifest["cycles_model_hls"] != tiny.cycles_model
    assert tiny.cycles_model_for("rtl") == tiny.cycles_model
    rtl = driver_info(dict(steps, cycles_last=[900], dram_rd_bytes=[256], dram_wr_bytes=[0], engine="rtl"), 100e6,
                      1024, 40, simulated=True, model=tiny.cycles_model)
    assert rtl["cycles_per_frame"] == 900 and rtl["cycles_from"] == "measured (RTL twin), RTL simulation"
    assert rtl["dram_rd_bytes_per_frame"] == 256 and rtl["dram_from"] == "measured (RTL twin)"


# ---- ZqOverlay ----------------------------------------------------------------------------
def test_overlay_module_needs_no_pynq(tiny, tmp_path):
    """overlay.py imports without pynq; ZqOverlay on the board then says what to do instead."""
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] == 'pynq':
            raise ImportError('blocked')
sys.meta_path.insert(0, Block())
from zynqflow.host.overlay import ZqOverlay
from zynqflow.host import BackendError
try:
    ZqOverlay('zynqnet-tiny_pynq-z2.bit', export={str(tiny.dir)!r})
except BackendError as e:
    print('refused:', e)
ol = ZqOverlay('zynqnet-tiny_pynq-z2.bit', export={str(tiny.dir)!r}, backend='golden')
print(type(ol).__name__, ol.backend, ol.classify(ol.export.vectors()[0][:2]).labels.tolist())
"""
    env = {k: v for k, v in os.environ.items() if k != "ZYNQFLOW_BACKEND"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout.splitlines()
    assert out[0].startswith("refused: ZqOverlay on a board needs pynq") and "ZYNQFLOW_BACKEND=rtl" in out[0]
    gold = golden_logits(tiny.qnet(), tiny.vectors()[0][:2]).argmax(1).tolist()
    assert out[1] == f"SimulatedZqOverlay golden {gold}"


def test_overlay_class_and_lookup(tiny, tmp_path, monkeypatch):
    pynq = pytest.importorskip("pynq")
    from zynqflow.host.overlay import ZqOverlay, board_overlay_class, find_bitfile, find_export

    cls = board_overlay_class()
    assert issubclass(cls, pynq.Overlay) and issubclass(cls, ZqOverlay) and board_overlay_class() is cls
    # the manifest beside the bitstream (the deploy layout) wins over $ZYNQFLOW_EXPORT
    d = tmp_path / "zynqnet-tiny"
    d.mkdir()
    for f in ("manifest.json", "integers.npz"):
        (d / f).write_bytes((tiny.dir / f).read_bytes())
    bit = d / "zynqnet-tiny_pynq-z2.bit"
    bit.write_bytes(b"\0")
    monkeypatch.setenv("ZYNQFLOW_EXPORT", str(tiny.dir))
    assert find_bitfile(bit) == bit.resolve() and find_export(bit).dir == d.resolve()
    # no bitstream anywhere: the export named by $ZYNQFLOW_EXPORT if it is that network
    assert find_bitfile("zynqnet-tiny_pynq-z2.bit") is None
    assert find_export("zynqnet-tiny_pynq-z2.bit").dir == tiny.dir
    with pytest.raises(Exception, match="network zynqnet-tiny, not zynqnet-nonesuch"):
        find_export("zynqnet-nonesuch_pynq-z2.bit")


def test_simulated_overlay_benchmark(tiny, frames, monkeypatch):
    """ZYNQFLOW_BACKEND=rtl: ZqOverlay(...) runs the board driver on the RTL, same methods."""
    from zynqflow.host.overlay import SimulatedZqOverlay, ZqOverlay

    monkeypatch.setenv("ZYNQFLOW_BACKEND", "rtl")
    monkeypatch.setenv("ZYNQFLOW_EXPORT", str(tiny.dir))
    ol = ZqOverlay("zynqnet-tiny_pynq-z2.bit")
    assert isinstance(ol, SimulatedZqOverlay) and ol.backend == "rtl" and "accelerator only" in repr(ol)
    b = ol.benchmark(n=8)
    assert b["frames"] == 8 and b["backend"] == "rtl" and b["fps_accelerator_only"] > b["fps_including_host"] > 0
    assert b["bytes_in_per_frame"] == tiny.bytes_per_frame and b["latency_ms"]["p50"] > 0


# ---- deploy: notebooks and the timing record -------------------------------------------------
def test_deploy_installs_notebooks_and_timing(tiny, tmp_path):
    bit = tmp_path / "bits" / "zynqnet-tiny_pynq-z2.bit"
    bit.parent.mkdir()
    bit.write_bytes(b"\0")
    bit.with_suffix(".hwh").write_text("<hwh/>")
    bit.with_suffix(".json").write_text(json.dumps({"network_id": f"0x{tiny.network_id:08x}", "fclk0_mhz": 100,
                                                    "wns_ns": 0.4}))
    stage = tmp_path / "stage"
    r = subprocess.run(["bash", str(REPO / "board" / "deploy.sh"), "BOARD=pynq.invalid", "NET=zynqnet-tiny",
                        f"EXPORT={tiny.dir}", f"BIT={bit}", "DRY_RUN=1", f"STAGE_DIR={stage}", "DEST=/opt/zq",
                        "NOTEBOOKS=/home/xilinx/jupyter_notebooks/zq"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    nbs = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
    assert nbs and sorted(p.name for p in (stage / "notebooks").glob("*.ipynb")) == nbs
    paths = json.loads((stage / "notebooks" / "zynqflow_paths.json").read_text())
    # the notebooks import the root-owned copy and load the root-owned bitstream (Jupyter runs as root)
    assert paths == {"lib": "/usr/local/lib/zynqflow/lib",
                     "bitfile": "/usr/local/lib/zynqflow/export/zynqnet-tiny/zynqnet-tiny_pynq-z2.bit",
                     "images": "images"}
    assert json.loads((stage / "zynqnet-tiny" / "zynqnet-tiny_pynq-z2.json").read_text())["wns_ns"] == 0.4
    # copied by BOARD_USER, not by root (root would write into a directory the user owns)
    assert "cp -r /opt/zq/notebooks/. /home/xilinx/jupyter_notebooks/zq/" in r.stdout
    assert "jupyter_notebooks" not in (stage / "install_root.sh").read_text()


def test_overlay_preprocesses_by_the_manifest_recipe(tmp_path):
    """ZqOverlay / Accelerator take images through the manifest's recipe, as the CLI does
    (for a Fashion-MNIST network: trim, resize, centre, negate a light background)."""
    from PIL import Image

    from zynqflow.host.overlay import ZqOverlay
    from zynqflow.host.preprocess import frames_for

    if not exports.REFERENCE_CKPT.exists():
        pytest.skip(f"no reference checkpoint at {exports.REFERENCE_CKPT}")
    ex = Export(exports.checkpoint_export(exports.REFERENCE_CKPT, frames=8)[0])
    img = np.full((40, 60), 235, np.uint8)            # a dark object, off centre, on a light background
    img[10:30, 35:55] = 30
    Image.fromarray(img, "L").save(tmp_path / "product.png")
    ol = ZqOverlay(f"{ex.network}_pynq-z2.bit", export=ex.dir, backend="golden")
    got = ol.preprocess([tmp_path / "product.png"])
    assert np.array_equal(got, frames_for(ex, [tmp_path / "product.png"]))
    assert not np.array_equal(got, frames_for(ex, [tmp_path / "product.png"], recipe="plain"))
    res = ol.classify([tmp_path / "product.png"])
    assert np.array_equal(res.logits, golden_logits(ex.qnet(), got))


def test_driver_on_the_hls_engine(tiny):
    """The HLS engine (engine_info without rtl_twin; its .hwh lists no RTL-only register): the
    driver reads only the registers it has; cycles_last and the DRAM counters report None."""
    from test_host import FakeAllocator, FakeMMIO, FakeOverlay

    from zynqflow.host.driver import DriverConfig, ZqDriver

    mmio = FakeMMIO(tiny, net_id=tiny.network_id, engine="hls")
    drv = ZqDriver(FakeOverlay(mmio, vitis_hwh_registers(E.offsets("hls"))), FakeAllocator(), tiny,
                   DriverConfig(source="x.bit"))
    assert drv.engine == "hls" and not drv.measures
    regs = drv.registers()
    assert regs["cycles_last"] is None and regs["dram_rd_bytes"] is None and regs["net_id"] == tiny.network_id
    assert "cycles_last" not in drv.describe() and "frames_done=3" in drv.describe()
    assert drv.check_network_id() == tiny.network_id and drv.engine == "hls"
    assert drv.engine_from == "the .hwh, confirmed by engine_info"
    rtl_only = {E.REG[n].offset for n in ("cycles_last", "dram_rd_bytes", "dram_wr_bytes", "dram_stall_cycles")}
    assert all(entry[1] not in rtl_only for entry in mmio.log)       # nothing read where it has no register
