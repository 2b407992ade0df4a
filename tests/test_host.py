"""Host package (zynqflow.host): backends, preprocessing, driver safety, CLI.

The driver's safety checks run against fakes of the PYNQ objects (an MMIO
whose net_id is wrong, a DMA that never completes, an allocator that returns
unusable addresses); the end-to-end runs through the RTL simulation are in
tests/test_host_rtl.py and tests/test_host_board.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zynqflow.host import (Accelerator, AcceleratorError, AcceleratorTimeout, BackendError, DdrBufferError,
                           EngineMismatch, ExportFilesError, NetworkIdMismatch, PreprocessError, WeightImageError)
from zynqflow.host import cli
from zynqflow.host.driver import DriverConfig, ZqDriver
from zynqflow.host.registers import RegMap
from zynqflow.host.stats import percentiles
from zynqflow.host.manifest import REPO, Export
from zynqflow.spec import engine as E
from zynqflow.host.preprocess import expand_inputs, to_frame, to_frames
from zynqflow.model.data import pad_to
from zynqflow.spec.golden import golden_logits
from zynqflow.export import fixtures as exports

HAVE_CXX = shutil.which(os.environ.get("CXX", "g++")) is not None
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason="no C++ compiler for the C simulation")


@pytest.fixture(scope="session")
def tiny() -> Path:
    return exports.random_export("zynqnet-tiny", seed=0, vectors=16)


@pytest.fixture(scope="session")
def mini() -> Path:
    return exports.random_export("zynqnet-mini", seed=0, vectors=16)


def _frames(shape, n, seed):
    rng = np.random.default_rng(seed)
    f = rng.integers(0, 256, (n,) + tuple(shape), dtype=np.uint8)
    f[0] = 0
    f[1] = 255
    return f


# ---- golden vs csim --------------------------------------------------------------
@needs_cxx
@pytest.mark.parametrize("net,n", [("tiny", 48), ("mini", 12)])
def test_golden_and_csim_identical(net, n, request):
    ex = Export(request.getfixturevalue(net))
    frames = _frames(ex.input_shape, n, seed=5)
    vec_in, vec_out = ex.vectors()
    gold = Accelerator(ex, "golden")
    csim = Accelerator(ex, "csim")
    g, c = gold.classify(frames), csim.classify(frames)
    assert g.logits.dtype == np.int64 and g.logits.shape == (n, ex.num_classes)
    assert np.array_equal(g.logits, c.logits) and np.array_equal(g.labels, c.labels)
    assert np.array_equal(g.logits, golden_logits(ex.qnet(), frames))
    # the export's own vectors, and streaming (frame by frame) gives the same
    assert np.array_equal(csim.classify(vec_in).logits, vec_out)
    s = csim.stream(frames[:8])
    assert np.array_equal(s.logits, g.logits[:8]) and len(s.latency_s) == 8 and s.fps > 0
    lat = s.latency_ms()
    assert set(lat) == {"p50", "p90", "p99"} and 0 < lat["p50"] <= lat["p90"] <= lat["p99"]
    assert g.names == [ex.class_names[i] for i in g.labels]


def test_results_topk(tiny):
    ex = Export(tiny)
    r = Accelerator(ex, "golden").classify(ex.vectors()[0][:4])
    top = r.topk(3)
    assert len(top) == 4 and all(len(t) == 3 for t in top)
    for row, t in zip(r.logits, top):
        order = sorted(range(len(row)), key=lambda c: (-row[c], c))[:3]
        assert [x["class"] for x in t] == order
        assert [x["name"] for x in t] == [ex.class_names[c] for c in order]
        assert [x["logit"] for x in t] == [int(row[c]) for c in order]
        assert t[0]["p"] >= t[1]["p"] >= t[2]["p"] and abs(sum(r.probabilities[0]) - 1) < 1e-9
    assert r.topk(99)[0][-1]["class"] in range(ex.num_classes) and len(r.topk(99)[0]) == ex.num_classes


def test_percentiles():
    p = percentiles(np.arange(1, 101) * 1e-3)
    assert p["p50"] == pytest.approx(50.5) and p["p90"] == pytest.approx(90.1) and p["p99"] == pytest.approx(99.01)


# ---- preprocessing -------------------------------------------------------------------
def test_preprocess_png_pad_28_to_32(tmp_path):
    """Fashion-MNIST-like 28x28 content is padded (not resized) into a 32x32 input."""
    img = (np.arange(28 * 28).reshape(28, 28) * 7 % 256).astype(np.uint8)
    Image.fromarray(img, "L").save(tmp_path / "a.png")
    f = to_frame(tmp_path / "a.png", (32, 32, 1), "gray")
    assert f.shape == (32, 32, 1) and f.dtype == np.uint8 and f.flags.c_contiguous
    assert np.array_equal(f[:, :, 0], pad_to(img[None, None], 32)[0, 0])
    assert np.array_equal(f[2:30, 2:30, 0], img) and f[:2].sum() == 0 and f[:, 30:].sum() == 0
    # already the input size: unchanged; inverted on request
    Image.fromarray(f[:, :, 0], "L").save(tmp_path / "b.png")
    assert np.array_equal(to_frame(tmp_path / "b.png", (32, 32, 1)), f)
    assert np.array_equal(to_frame(tmp_path / "b.png", (32, 32, 1), invert=True), 255 - f)


def test_preprocess_jpeg_rgb_to_gray_resized(tmp_path):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    Image.fromarray(rgb, "RGB").save(tmp_path / "c.jpg", quality=95)
    f = to_frame(tmp_path / "c.jpg", (16, 16, 1), "gray")
    assert f.shape == (16, 16, 1) and f.dtype == np.uint8
    # the rule: Pillow decode -> L -> centre crop to 40x40 -> bilinear 16x16
    want = Image.open(tmp_path / "c.jpg").convert("L").crop((10, 0, 50, 40)).resize((16, 16), Image.Resampling.BILINEAR)
    assert np.array_equal(f[:, :, 0], np.asarray(want))
    # a Fashion-MNIST network: resized to the dataset's 28 x 28 content, then padded to 32
    from zynqflow.host.preprocess import content_size
    assert content_size((32, 32, 1), "fashion-mnist") == 28
    assert content_size((32, 32, 1), "") is None and content_size((16, 16, 1), "fashion-mnist") is None
    ff = to_frame(tmp_path / "c.jpg", (32, 32, 1), "gray", content=28)
    want28 = Image.open(tmp_path / "c.jpg").convert("L").crop((10, 0, 50, 40)).resize((28, 28), Image.Resampling.BILINEAR)
    assert np.array_equal(ff[2:30, 2:30, 0], np.asarray(want28))
    assert ff[:2].sum() == 0 and ff[30:].sum() == 0 and ff[:, :2].sum() == 0 and ff[:, 30:].sum() == 0
    # RGB network: three channels; a gray image is replicated into them
    f3 = to_frame(tmp_path / "c.jpg", (32, 32, 3), "rgb")
    assert f3.shape == (32, 32, 3) and not np.array_equal(f3[..., 0], f3[..., 1])
    Image.fromarray(rgb[:, :, 0], "L").save(tmp_path / "g.png")
    g3 = to_frame(tmp_path / "g.png", (32, 32, 3), "rgb")
    assert g3.shape == (32, 32, 3) and np.array_equal(g3[..., 0], g3[..., 1]) and np.array_equal(g3[..., 1], g3[..., 2])


def test_preprocess_arrays():
    shape = (16, 16, 1)
    batch = _frames(shape, 5, seed=2)
    assert to_frames(batch, shape) is not None and np.array_equal(to_frames(batch, shape), batch)
    assert np.array_equal(to_frames(batch[0], shape), batch[:1])
    assert np.array_equal(to_frames(batch[0, :, :, 0], shape), batch[:1])          # H x W
    fl = np.linspace(0, 1, 256).reshape(16, 16)
    assert np.array_equal(to_frame(fl, shape)[:, :, 0], np.rint(fl * 255).astype(np.uint8))
    rgba = np.zeros((16, 16, 4), np.uint8)
    rgba[..., 0] = 255
    assert to_frame(rgba, shape)[0, 0, 0] == 76          # L = 299/1000 * 255
    gray_stack = batch[:, :, :, 0]                        # N x H x W
    assert np.array_equal(to_frames(gray_stack, shape), batch)
    assert to_frames([batch[0], batch[1, :, :, 0]], shape).shape == (2, 16, 16, 1)
    with pytest.raises(PreprocessError, match="shape"):
        to_frame(np.zeros((4, 4, 2)), shape)
    with pytest.raises(PreprocessError, match="NaN"):
        to_frame(np.full((4, 4), np.nan), shape)


def test_preprocess_bad_files(tmp_path):
    (tmp_path / "x.png").write_bytes(b"not an image")
    with pytest.raises(PreprocessError, match="x.png"):
        to_frame(tmp_path / "x.png", (16, 16, 1))
    with pytest.raises(PreprocessError, match="nope.png"):
        to_frame(tmp_path / "nope.png", (16, 16, 1))
    (tmp_path / "x.png").unlink()
    (tmp_path / "notes.txt").write_text("not an image suffix: skipped in directories")
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "b.png")
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "a.jpg")
    assert [p.name for p in expand_inputs([str(tmp_path)])] == ["a.jpg", "b.png"]
    assert [p.name for p in expand_inputs([str(tmp_path / "*.png")])] == ["b.png"]
    with pytest.raises(PreprocessError, match="no file matches"):
        expand_inputs([str(tmp_path / "*.gif")])


# ---- clear errors ----------------------------------------------------------------------
def test_unknown_backend_and_missing_files(tiny, tmp_path):
    with pytest.raises(BackendError, match=r"unknown backend 'fpga'.*golden, csim, rtl, pynq"):
        Accelerator(tiny, backend="fpga")
    with pytest.raises(ExportFilesError, match=r"nowhere/manifest.json.*make export"):
        Export(tmp_path / "nowhere")
    part = tmp_path / "partial"
    shutil.copytree(tiny, part)
    (part / "integers.npz").unlink()
    (part / "net_params.h").unlink()
    (part / "rtl_params.svh").unlink()
    with pytest.raises(ExportFilesError, match=r"golden backend needs .*integers.npz"):
        Accelerator(part, backend="golden")
    with pytest.raises(ExportFilesError, match=r"csim backend needs .*net_params.h"):
        Accelerator(part, backend="csim")
    with pytest.raises(ExportFilesError, match=r"rtl backend needs .*rtl_params.svh.*integers.npz"):
        Accelerator(part, backend="rtl")
    with pytest.raises(ExportFilesError, match=r"no bitstream for zynqnet-tiny.*zynqnet-tiny_pynq-z2.bit"):
        Accelerator(part, backend="pynq")
    (part / "zynqnet-tiny_pynq-z2.bit").write_bytes(b"\0")
    with pytest.raises(ExportFilesError, match=r"zynqnet-tiny_pynq-z2.hwh"):
        Accelerator(part, backend="pynq")
    old = json.loads((part / "manifest.json").read_text())
    (part / "manifest.json").write_text(json.dumps(dict(old, format_version=1)))
    with pytest.raises(ExportFilesError, match=r"format_version 1, this host reads 2 .*re-export"):
        Export(part)
    (part / "manifest.json").write_text(json.dumps(dict(old, spec_version=1)))
    from zynqflow.spec.engine import SPEC_VERSION
    with pytest.raises(ExportFilesError,
                       match=rf"engine specification version 1, this host implements version {SPEC_VERSION}"):
        Export(part)
    (part / "manifest.json").write_text("{}")
    with pytest.raises(ExportFilesError, match="not a zynqflow manifest"):
        Export(part)


# ---- the driver against fake PYNQ objects ------------------------------------------------
class FakeMMIO:
    """The engine's registers (the RTL twin's map, or the HLS engine's with ``engine="hls"``):
    net_id, build_params and engine_info as the manifest's (or as given), written at ap_start
    when ``latch_on_start`` (as the RTL twin does), else present from the beginning."""

    def __init__(self, ex: Export, net_id: int, status: int = 0, latch_on_start: bool = False,
                 engine: str = "rtl", build_params: int | None = None, engine_info: int | None = None):
        self.rm = RegMap(engine)
        self.regs, self.log = {o: 0 for o in E.offsets("rtl").values()}, []
        self.regs[self.rm["status"]] = status
        self.regs[self.rm["frames_done"]] = 3
        if engine == "rtl":
            self.regs[self.rm["cycles_last"]] = 1234
        self.regs[self.rm["AP_CTRL"]] = self.rm.mask("ap_idle")
        self.ids = {"net_id": net_id, "build_params": ex.build_params if build_params is None else build_params,
                    "engine_info": ex.engine_info[engine] if engine_info is None else engine_info}
        self.latch = latch_on_start
        if not latch_on_start:
            self._publish()

    def _publish(self):
        for k, v in self.ids.items():
            self.regs[self.rm[k]] = v

    def read(self, off, length=4):
        self.log.append(("r", off))
        return self.regs[off]

    def write(self, off, value):
        self.log.append(("w", off, value))
        if off == self.rm["AP_CTRL"]:
            if value & self.rm.mask("ap_start"):
                self.regs[off] = (self.regs[off] | self.rm.mask("ap_start")) & ~self.rm.mask("ap_idle")
                if self.latch:
                    self._publish()
            self.regs[off] = (self.regs[off] & ~self.rm.mask("auto_restart")) | (value & self.rm.mask("auto_restart"))
        elif off in (self.rm["wts"], self.rm["wts_hi"], self.rm["act"], self.rm["act_hi"]):
            self.regs[off] = value

    def writes_to(self, *names):
        offs = {self.rm[n] for n in names}
        return [w for w in self.log if w[0] == "w" and w[1] in offs]


class FakeBuffer(np.ndarray):
    physical_address = 0x1000_0000
    flushed = None

    def flush(self):
        self.flushed = self.tobytes()

    def invalidate(self):
        pass

    def freebuffer(self):
        self.freed = True


class FakeAllocator:
    """pynq.allocate: buffers from ``base`` up, each on an ``align`` boundary."""

    def __init__(self, base=0x1000_0000, align=0x1000):
        self.next, self.align, self.buffers = base, align, []

    def __call__(self, shape, dtype=np.uint32, **kw):
        b = np.zeros(shape, dtype).view(FakeBuffer)
        b.physical_address = self.next
        self.next += -(-max(b.nbytes, 1) // self.align) * self.align
        self.buffers.append(b)
        return b


def fake_allocate(shape, dtype=np.uint32, **kw):
    return FakeAllocator()(shape, dtype)


class FakeChannel:
    """A DMA channel that accepts transfers and never completes them."""

    def __init__(self):
        self.transfers = []
        self.busy = False
        self.error = False
        self.transferred = 0

    def transfer(self, buf, start=0, nbytes=0):
        self.transfers.append(bytes(np.asarray(buf).tobytes()))
        self.busy = True

    @property
    def idle(self):
        return not self.busy

    def wait(self):
        raise AssertionError("wait() before idle would hang on a board")


class FakeOverlay:
    def __init__(self, mmio, registers=None):
        self.ip_dict = {"zq_top_0": {"type": "zynqflow.org:hls:zq_top:1.0"},
                        "axi_dma_0": {"type": "xilinx.com:ip:axi_dma:7.1"},
                        "processing_system7_0": {"type": "xilinx.com:ip:processing_system7:5.5"}}
        if registers is not None:
            self.ip_dict["zq_top_0"]["registers"] = registers
        self.zq_top_0 = type("IP", (), {"mmio": mmio})()
        self.axi_dma_0 = type("DMA", (), {"sendchannel": FakeChannel(), "recvchannel": FakeChannel()})()


class FakeClock:
    def __init__(self, step=0.01):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def _driver(ex, mmio, allocate=None, registers=None, **kw):
    ol = FakeOverlay(mmio, registers)
    return ZqDriver(ol, allocate or FakeAllocator(), ex, DriverConfig.of(source="bitstream /tmp/fake.bit", **kw),
                    clock=FakeClock()), ol


def test_network_id_mismatch_before_any_frame(tiny):
    ex = Export(tiny)
    rm = RegMap("rtl")
    frames = ex.vectors()[0][:2]
    for mode in ("classify", "stream"):
        mmio = FakeMMIO(ex, net_id=0xDEADBEEF)
        drv, ol = _driver(ex, mmio)
        with pytest.raises(NetworkIdMismatch) as e:
            getattr(drv, mode)(frames)
        msg = str(e.value)
        assert "0xdeadbeef" in msg and f"0x{ex.network_id:08x}" in msg
        assert str(ex.manifest_path) in msg and "/tmp/fake.bit" in msg
        assert ol.axi_dma_0.sendchannel.transfers == [] and ol.axi_dma_0.recvchannel.transfers == []
        assert not any(w[2] & rm.mask("auto_restart") for w in mmio.writes_to("AP_CTRL"))
    # net_id latched at ap_start (the RTL): read 0, start, read the real ID, still no frame
    mmio = FakeMMIO(ex, net_id=0x12345678, latch_on_start=True)
    drv, ol = _driver(ex, mmio)
    with pytest.raises(NetworkIdMismatch, match="0x12345678"):
        drv.classify(frames)
    assert ol.axi_dma_0.sendchannel.transfers == []
    # an engine that only publishes net_id with a frame's results (the HLS one) gets a one-beat
    # probe frame, answered with an error frame; then the ID is checked
    for hls_id, ok in ((ex.network_id, True), (0x0BADF00D, False)):
        mmio = FakeMMIO(ex, net_id=0, latch_on_start=True, engine="hls")
        drv, ol = _driver(ex, mmio)
        send, recv = ol.axi_dma_0.sendchannel, ol.axi_dma_0.recvchannel

        def done_transfer(ch, publish=False):
            def transfer(buf, start=0, nbytes=0):
                ch.transfers.append(bytes(np.asarray(buf).tobytes()))
                if publish:
                    mmio.ids["net_id"] = hls_id
                    mmio._publish()
            return transfer
        send.transfer = done_transfer(send, publish=True)
        recv.transfer = done_transfer(recv)
        send.wait = recv.wait = lambda: None
        if ok:
            assert drv.check_network_id() == ex.network_id and drv.id_probed
            assert drv.engine == "hls" and drv.engine_from == "engine_info" and drv.regs.read_optional("cycles_last") is None
        else:
            with pytest.raises(NetworkIdMismatch, match="0x0badf00d"):
                drv.check_network_id()
        assert [len(t) for t in send.transfers] == [4] and [len(t) for t in recv.transfers] == [4 * ex.num_classes]
    # ... and a probe that never comes back times out with the registers
    mmio = FakeMMIO(ex, net_id=0, latch_on_start=True)
    drv, ol = _driver(ex, mmio, timeout_s=0.05)
    with pytest.raises(AcceleratorTimeout, match="network-ID probe"):
        drv.classify(frames)
    assert [len(t) for t in ol.axi_dma_0.sendchannel.transfers] == [4]


def test_dma_timeout_reports_status(tiny):
    ex = Export(tiny)
    for mode in ("classify", "stream"):
        mmio = FakeMMIO(ex, net_id=ex.network_id, status=0x00020001)
        drv, ol = _driver(ex, mmio, timeout_s=0.2)
        with pytest.raises(AcceleratorTimeout) as e:
            getattr(drv, mode)(ex.vectors()[0][:3])
        msg = str(e.value)
        assert "MM2S (input) transfer of frame 0" in msg and "within 0.2 s" in msg
        assert "status=0x00020001 (short_frame, 2 error frames)" in msg
        assert "AP_CTRL=0x" in msg and "ap_start" in msg and "frames_done=3" in msg and "cycles_last=1234" in msg
        assert len(ol.axi_dma_0.sendchannel.transfers) == 1       # frame 0 only, then the deadline
    # a DMA error is reported as such, with the registers
    mmio = FakeMMIO(ex, net_id=ex.network_id, status=2)
    drv, ol = _driver(ex, mmio, timeout_s=10)
    ol.axi_dma_0.sendchannel.error = True
    with pytest.raises(AcceleratorError, match=r"DMA MM2S \(input\) error at frame 0.*status=0x00000002 \(long_frame\)"):
        drv.stream(ex.vectors()[0][:3])


def test_driver_rejects_bad_frames(tiny):
    ex = Export(tiny)
    drv, _ = _driver(ex, FakeMMIO(ex, ex.network_id))
    with pytest.raises(TypeError, match="uint8"):
        drv.classify(np.zeros((1,) + ex.input_shape, np.float32))
    with pytest.raises(ValueError, match="HWC"):
        drv.classify(np.zeros((1, 8, 8, 1), np.uint8))


# ---- the open sequence: weight image, DDR buffers, engine build -------------------------------
def test_open_loads_the_weight_image_into_ddr(tiny):
    """On open: the weight image (weights.bin) into an allocated buffer, flushed, then wts/act
    written (low word, high word); the engine's registers are compared with the buffers' addresses
    before every call and rewritten only when it lost them (a PL reset)."""
    ex = Export(tiny)
    mmio, alloc = FakeMMIO(ex, ex.network_id), FakeAllocator(base=0x1234_0000)
    drv, _ = _driver(ex, mmio, alloc)
    wbuf = alloc.buffers[0]
    image = (Path(tiny) / "weights.bin").read_bytes()
    assert wbuf.nbytes == ex.weight_image_bytes == len(image) and wbuf.flushed == image
    assert ex.scratch_bytes == 0 and len(alloc.buffers) == 1              # no scratch area: act = wts, unused
    assert drv.bases == dict(wts=0x1234_0000, act=0x1234_0000) and drv.weight_loads == 1
    assert [(w[1], w[2]) for w in mmio.writes_to("wts", "wts_hi", "act", "act_hi")] == [
        (0x10, 0x1234_0000), (0x14, 0), (0x1C, 0x1234_0000), (0x20, 0)]
    assert drv._ensure_bases() == [] and len(mmio.writes_to("wts")) == 1   # held: nothing rewritten
    mmio.regs[mmio.rm["wts"]] = 0                                          # a PL reset clears them
    drv.check_network_id()
    assert drv._ensure_bases() == ["wts"] and drv.bases_rewritten == 1 and not drv.id_checked   # checked again
    assert mmio.regs[mmio.rm["wts"]] == 0x1234_0000 and len(mmio.writes_to("act")) == 1
    drv.close()
    assert getattr(wbuf, "freed", False)


def test_weights_bin_checked_before_the_board_is_touched(tiny, tmp_path, monkeypatch, capsys):
    """A weights.bin that does not belong to the manifest: WeightImageError naming the file and the
    header field, from Export, from open_board before pynq.Overlay is called, and from the CLI (exit 2)."""
    import zynqflow.host.board as board

    part = tmp_path / "ex"
    shutil.copytree(tiny, part)
    good = (part / "weights.bin").read_bytes()
    wb = part / "weights.bin"

    def patched(at: int, value: int) -> bytes:
        b = bytearray(good)
        b[at:at + 4] = value.to_bytes(4, "little")
        return bytes(b)

    ex = Export(part)
    cases = [(patched(0, 0x12345678), r"header field magic is 0x12345678.*'ZQW1'"),
             (patched(4, 7), r"header field spec_version is 7, this host's engine specification"),
             (patched(8, ex.network_id ^ 1), rf"header field net_id is 0x{ex.network_id ^ 1:08x}, .*manifest.json "
                                              rf"\(network_id_int\) says 0x{ex.network_id:08x}"),
             (patched(12, 64), r"header field word_bytes is 64, .*\(engine.word_bytes = N_PE x N_CI\) says 128"),
             (patched(16, ex.weight_words + 1), r"header field n_words is"),
             (good[:-128], r"bytes, its header says 3840"),
             (b"ZQ", r"shorter than the 24-byte weight image header")]
    for data, pattern in cases:
        wb.write_bytes(data)
        with pytest.raises(WeightImageError, match=pattern) as e:
            Export(part).weight_image()
        assert str(wb) in str(e.value)
    wb.unlink()
    with pytest.raises(WeightImageError, match=r"weights.bin: no weight image"):
        Export(part).weight_image()
    # open_driver: refused before the bitstream is loaded
    wb.write_bytes(patched(8, ex.network_id ^ 1))
    (part / "zynqnet-tiny_pynq-z2.bit").write_bytes(b"\0")
    (part / "zynqnet-tiny_pynq-z2.hwh").write_text("<hwh/>")
    loads = []
    monkeypatch.setattr(board, "load_overlay", lambda *a, **k: loads.append(a))
    with pytest.raises(WeightImageError, match="header field net_id"):
        board.open_driver(Export(part))
    assert loads == []
    rc = cli.main(["info", "--export", str(part), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert rc == 0 and info["backends"]["pynq"].startswith(f"unavailable: {wb}: header field net_id")
    assert cli.main(["classify", str(tmp_path / "x.png"), "--export", str(part), "--backend", "pynq"]) == 2
    assert f"{wb}: header field net_id" in capsys.readouterr().err
    # the driver checks it too (before any register access)
    mmio = FakeMMIO(ex, ex.network_id)
    with pytest.raises(WeightImageError):
        _driver(Export(part), mmio)
    assert mmio.log == []


@pytest.mark.parametrize("base,align,what", [
    (0x1000_0100, 0x100, "is not 4096-byte aligned"),
    (E.DDR_WINDOW_BYTES, 0x1000, "past the engine's DDR window (0x0 .. 0x20000000, 512 MiB)"),
])
def test_ddr_buffer_outside_what_the_engine_takes(tiny, base, align, what):
    """allocate() returns a buffer the engine would refuse (status address_range): a clear error
    naming the buffer, its address and the rule, before any register is written; the buffer freed."""
    ex = Export(tiny)
    mmio, alloc = FakeMMIO(ex, ex.network_id), FakeAllocator(base=base, align=align)
    with pytest.raises(DdrBufferError) as e:
        _driver(ex, mmio, alloc)
    msg = str(e.value)
    assert f"weight image (m_axi_wts) buffer ({ex.weight_image_bytes} bytes)" in msg and f"0x{base:08x}" in msg
    assert what in msg and "address_range" in msg and "/tmp/fake.bit" in msg
    assert mmio.log == [] and all(getattr(b, "freed", False) for b in alloc.buffers)


def test_engine_build_differs_from_the_manifest(tiny):
    """Same network ID, another engine build (N_PE x N_CI, spec version, weight cache): EngineMismatch
    with both sides decoded; no frame sent. engine_info bit rtl_twin chooses the register map."""
    ex = Export(tiny)
    bp = E.build_params(32, 8, 8, 8)
    mmio = FakeMMIO(ex, ex.network_id, build_params=bp)
    drv, ol = _driver(ex, mmio)
    with pytest.raises(EngineMismatch) as e:
        drv.classify(ex.vectors()[0][:1])
    msg = str(e.value)
    assert f"build_params 0x{bp:08x} (n_pe=32, n_ci=8" in msg and "the manifest" in msg and "(n_pe=16, n_ci=8" in msg
    assert str(ex.manifest_path) in msg and "no frame was sent" in msg
    assert ol.axi_dma_0.sendchannel.transfers == []
    other = E.engine_info(rtl_twin=True, weight_cache=False, ddr_tensors=False)
    drv, _ = _driver(ex, FakeMMIO(ex, ex.network_id, engine_info=other))
    sv = E.SPEC_VERSION
    with pytest.raises(EngineMismatch, match=rf"engine_info 0x{other:08x} \(spec_version={sv}, rtl_twin=True, "
                                             rf"weight_cache=False.*the manifest 0x{0x300 | sv:08x}"):
        drv.check_network_id()
    drv, _ = _driver(ex, FakeMMIO(ex, ex.network_id, engine_info=0x301))
    with pytest.raises(EngineMismatch, match=rf"specification version 1 \(engine_info=0x00000301\), this host "
                                             rf"version {sv}"):
        drv.check_network_id()
    # the .hwh lists the HLS engine's registers, engine_info says the RTL twin: the RTL map
    from zynqflow.sim.world.pynq_shim import vitis_hwh_registers

    drv, _ = _driver(ex, FakeMMIO(ex, ex.network_id), registers=vitis_hwh_registers(E.offsets("hls")))
    assert drv.engine == "hls" and drv.engine_from == "the .hwh" and drv.regs.read_optional("cycles_last") is None
    assert drv.check_network_id() == ex.network_id and drv.engine == "rtl" and drv.regs.read_optional("cycles_last") == 1234


# ---- command line ----------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["golden", pytest.param("csim", marks=needs_cxx)])
def test_cli_classify_png(backend, tiny, tmp_path, capsys):
    ex = Export(tiny)
    imgs = []
    for i in range(3):
        a = np.random.default_rng(i).integers(0, 256, (28, 28), dtype=np.uint8)
        Image.fromarray(a, "L").save(tmp_path / f"img{i}.png")
        imgs.append(str(tmp_path / f"img{i}.png"))
    rc = cli.main(["classify", *imgs, "--backend", backend, "--export", str(tiny), "--top", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    gold = Accelerator(ex, "golden").classify(imgs)
    lines = [l for l in out.splitlines() if l.startswith(str(tmp_path))]
    assert len(lines) == 3 and f"on {backend}" in out
    for line, top in zip(lines, gold.topk(2)):
        names = [seg.split(" (")[0] for seg in line.split(": ", 1)[1].split("), ")]
        assert names == [t["name"] for t in top]
    rc = cli.main(["classify", imgs[0], "--backend", backend, "--export", str(tiny), "--json", "--top", "3"])
    js = json.loads(capsys.readouterr().out)
    assert rc == 0 and js["results"][0]["name"] == gold.names[0]
    assert [t["name"] for t in js["results"][0]["topk"]] == [t["name"] for t in gold.topk(3)[0]]


def test_cli_errors(tiny, tmp_path, capsys):
    assert cli.main(["classify", "x.png", "--export", str(tmp_path / "none")]) == 2
    assert "manifest.json" in capsys.readouterr().err
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "a.png")
    assert cli.main(["classify", str(tmp_path / "a.png"), "--export", str(tiny), "--backend", "tpu"]) == 2
    assert "unknown backend 'tpu'" in capsys.readouterr().err
    assert cli.main(["classify", str(tmp_path / "b.png"), "--export", str(tiny), "--backend", "golden"]) == 2
    assert "b.png: no such file" in capsys.readouterr().err


def test_cli_stream_benchmark_info(tiny, tmp_path, capsys):
    for i in range(4):
        Image.fromarray(np.full((16, 16), 60 * i, np.uint8)).save(tmp_path / f"f{i}.png")
    assert cli.main(["stream", str(tmp_path), "--export", str(tiny), "--backend", "golden", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["frames"] == 4 and s["fps"] > 0 and set(s["latency_ms"]) == {"p50", "p90", "p99"}
    assert [r["file"] for r in s["results"]] == [str(tmp_path / f"f{i}.png") for i in range(4)]
    backends = "golden,csim" if HAVE_CXX else "golden"
    assert cli.main(["benchmark", "--export", str(tiny), "--backend", backends, "--frames", "8", "--json",
                     "--out", str(tmp_path / "b.json")]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["backend"] for r in rows] == backends.split(",") and all(r["bit_exact_vs_first"] for r in rows)
    assert json.loads((tmp_path / "b.json").read_text())["rows"][0]["frames"] == 8
    assert cli.main(["info", "--export", str(tiny), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["default_backend"] == ("csim" if HAVE_CXX else "golden") and not info["on_board"]
    assert info["backends"]["pynq"].startswith("unavailable: no bitstream")


def test_console_script_and_module(tiny, tmp_path):
    Image.fromarray(np.zeros((28, 28), np.uint8)).save(tmp_path / "z.png")
    exe = Path(sys.executable).parent / "zynqflow"
    cmds = [[sys.executable, "-m", "zynqflow.host.cli"]] + ([[str(exe)]] if exe.exists() else [])
    for cmd in cmds:
        r = subprocess.run(cmd + ["classify", str(tmp_path / "z.png"), "--backend", "golden", "--export", str(tiny),
                                  "--top", "1"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        gold = Accelerator(tiny, "golden").classify([tmp_path / "z.png"]).names[0]
        assert f"z.png: {gold} (" in r.stdout


def test_regmap_is_the_engine_specification():
    """The driver's register map is spec.engine's: the RTL twin's has the measured registers, the
    HLS engine's only the shared ones (at the same offsets); 64-bit registers as two words."""
    rtl, hls = RegMap("rtl"), RegMap("hls")
    assert rtl.offsets == E.offsets("rtl") and hls.offsets == E.offsets("hls")
    assert rtl["net_id"] == hls["net_id"] == E.REG["net_id"].offset
    assert (rtl["wts"], rtl["wts_hi"], rtl["act"], rtl["act_hi"]) == (0x10, 0x14, 0x1C, 0x20)
    assert "cycles_last" in rtl and "cycles_last" not in hls and "dram_rd_bytes" not in hls
    assert all(rtl[n] == o for n, o in hls.offsets.items())
    assert rtl.mask("ap_start", "auto_restart") == 0x81 and rtl.decode_ctrl(0x4).endswith("(ap_idle)")
    with pytest.raises(ValueError, match="'hls'.*'rtl'"):
        RegMap("vitis")


# ---- board scripts (no Vivado, no board here: their checks and the staged tree) -----------
def _sh(args, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(["bash", *args], capture_output=True, text=True, env=e, timeout=120, **kw)


def test_bitstream_script_without_vivado(tmp_path):
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p and not (Path(p) / "vivado").exists())
    r = _sh([str(REPO / "board" / "bitstream.sh"), "zynqnet-tiny"], env={"PATH": path})
    assert r.returncode == 1 and "vivado not found on PATH" in r.stderr and "No bitstream was built" in r.stderr
    assert not list((REPO / "bitstreams").glob("*.bit"))


def test_deploy_script_checks_and_stages(tiny, tmp_path):
    deploy = str(REPO / "board" / "deploy.sh")
    r = _sh([deploy])
    assert r.returncode == 2 and "BOARD is not set" in r.stderr
    bit = tmp_path / "bits" / "zynqnet-tiny_pynq-z2.bit"
    common = ["NET=zynqnet-tiny", f"EXPORT={tiny}", f"BIT={bit}", "DRY_RUN=1"]
    r = _sh([deploy, "BOARD=pynq.invalid", *common])
    assert r.returncode == 2 and str(bit) in r.stderr and "zynqnet-tiny_pynq-z2.hwh" in r.stderr
    assert "Nothing was copied" in r.stderr and "board/bitstream.sh" in r.stderr
    bit.parent.mkdir()
    bit.write_bytes(b"\0")
    bit.with_suffix(".hwh").write_text("<hwh/>")
    bit.with_suffix(".json").write_text(json.dumps({"network_id": "0x00000001"}))
    r = _sh([deploy, "BOARD=pynq.invalid", *common])
    assert r.returncode == 2 and "network ID 0x00000001" in r.stderr
    bit.with_suffix(".json").write_text(json.dumps({"network_id": f"0x{Export(tiny).network_id:08x}"}))
    stage = tmp_path / "stage"
    r = _sh([deploy, "BOARD=pynq.invalid", *common, f"STAGE_DIR={stage}"])
    assert r.returncode == 0, r.stderr
    for f in ["zynqnet-tiny/manifest.json", "zynqnet-tiny/zynqnet-tiny_pynq-z2.bit", "zynqnet-tiny/zynqnet-tiny_pynq-z2.hwh",
              "zynqnet-tiny/weights.bin", "zynqnet-tiny/integers.npz", "lib/zynqflow/host/driver.py",
              "lib/zynqflow/host/cli.py", "lib/zynqflow/spec/golden.py", "lib/zynqflow/spec/engine.py", "zynqflow"]:
        assert (stage / f).is_file(), f
    assert (stage / "zynqnet-tiny" / "weights.bin").read_bytes() == (Path(tiny) / "weights.bin").read_bytes()
    assert not (stage / "zynqnet-tiny" / "regmap.json").exists()
    assert "ssh" in r.stdout and "pynq.invalid" in r.stdout


def test_deploy_sudoers_opens_no_hole(tiny, tmp_path):
    """The wrapper needs no terminal and opens no hole: a sudoers drop-in for exactly one root-owned
    command (the runner: the system python isolated, -I -S, on a root-owned copy of the host package),
    env_reset keeping nothing, no -E and no SETENV; it passes visudo -c. The root step goes over ssh to
    sudo's stdin. The runner ignores PYTHONPATH (a planted package is not imported) and takes the
    deployed, root-owned export. (tests/test_runner.py: each way to root, tried by a non-root user.)"""
    bit = tmp_path / "bits" / "zynqnet-tiny_pynq-z2.bit"
    bit.parent.mkdir()
    bit.write_bytes(b"\0")
    bit.with_suffix(".hwh").write_text("<hwh/>")
    stage = tmp_path / "stage"
    r = _sh([str(REPO / "board" / "deploy.sh"), "BOARD=pynq.invalid", "NET=zynqnet-tiny", f"EXPORT={tiny}",
             f"BIT={bit}", "DRY_RUN=1", f"STAGE_DIR={stage}", f"DEST={stage}"])
    assert r.returncode == 0, r.stderr
    assert 'ssh -t  xilinx@pynq.invalid "printf %s <install_root.sh, base64> | base64 -d | sudo sh -s"' in r.stdout
    sudoers = (stage / "zynqflow.sudoers").read_text()
    rules = [l for l in sudoers.splitlines() if l.strip() and not l.startswith("#")]
    runner = "/usr/local/lib/zynqflow/bin/zynqflow-run"
    assert rules == [f"Cmnd_Alias ZYNQFLOW = {runner}",
                     "Defaults!ZYNQFLOW env_reset, !setenv, !requiretty",
                     "xilinx ALL = (root) NOPASSWD: ZYNQFLOW"]
    assert "SETENV" not in sudoers and "env_keep" not in sudoers and "ALL = (root) NOPASSWD: ALL" not in sudoers
    assert "/home" not in sudoers
    wrapper = (stage / "zynqflow").read_text()
    assert f'exec sudo -n "$R" "$@"' in wrapper and f"R={runner}" in wrapper and "-E" not in wrapper
    visudo = shutil.which("visudo") or next((p for p in ("/usr/sbin/visudo", "/sbin/visudo") if Path(p).exists()), None)
    if visudo is None:
        import warnings
        warnings.warn("CANNOT CHECK the sudoers drop-in: no visudo (apt-get install sudo; make setup does as root)")
        pytest.skip("CANNOT CHECK the sudoers drop-in: no visudo (apt-get install sudo; make setup does as root)")
    v = subprocess.run([visudo, "-c", "-f", str(stage / "zynqflow.sudoers")], capture_output=True, text=True)
    assert v.returncode == 0 and "parsed OK" in v.stdout, v.stdout + v.stderr
    # the root step under a fake root, as deploy.sh runs it (on stdin); then the runner as sudo would start it
    root = tmp_path / "root"
    r = subprocess.run(["sh", "-s"], input=(stage / "install_root.sh").read_text(), capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable))
    assert r.returncode == 0, r.stderr
    assert f"zynqflow-installed: /usr/local/bin/zynqflow -> {runner}" in r.stdout
    assert (root / "etc/sudoers.d/zynqflow").read_text() == sudoers
    evil = tmp_path / "evil" / "zynqflow"
    evil.mkdir(parents=True)
    (evil / "__init__.py").write_text("raise SystemExit('planted package imported')")
    w = subprocess.run([str(root / runner.lstrip("/")), "info", "--json"], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120, env={"PATH": os.environ["PATH"], "PYTHONPATH": str(evil.parent)})
    assert w.returncode == 0, w.stderr
    info = json.loads(w.stdout)
    assert info["export"] == str(root / "usr/local/lib/zynqflow/export/zynqnet-tiny") and info["xilinx_xrt"] == "/usr"
    assert info["backends"]["pynq"].startswith("bitstream ") and info["default_backend"] == "golden"


def test_fashion_mnist_png_equals_dataset_frame(tmp_path):
    """A raw 28x28 Fashion-MNIST test image saved as PNG becomes exactly the dataset's padded 32x32 frame."""
    from zynqflow.model.data import DEBIAN_FASHION_DIR, FASHION_FILES, _find_idx, read_idx

    ip = _find_idx(DEBIAN_FASHION_DIR, FASHION_FILES["test"][0])
    if ip is None:
        pytest.skip(f"no Fashion-MNIST test images in {DEBIAN_FASHION_DIR}")
    raw = read_idx(ip, 3)[:6]
    for i, img in enumerate(raw):
        Image.fromarray(img, "L").save(tmp_path / f"fm{i}.png")
    frames = to_frames([tmp_path / f"fm{i}.png" for i in range(6)], (32, 32, 1), "gray")
    assert np.array_equal(frames, pad_to(raw[:, None], 32).transpose(0, 2, 3, 1))


@pytest.mark.skipif(shutil.which("tclsh") is None, reason="no tclsh")
@pytest.mark.parametrize("board_files", ["", "tul.com.tw:pynq-z2:part0:1.0"])
def test_block_design_tcl_with_mock_vivado(tmp_path, board_files):
    """board/pynq_z2.tcl under tclsh with every Vivado command stubbed: it runs to the end,
    wires what the driver expects and copies <net>_pynq-z2.bit/.hwh."""
    from vivado_mock import run_block_design

    r, log, _ = run_block_design(tmp_path, MOCK_BOARD=board_files)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "out" / "zynqnet-mini_pynq-z2.bit").read_bytes() == b"bit"
    assert (tmp_path / "out" / "zynqnet-mini_pynq-z2.hwh").read_text() == "<hwh/>"
    for line in ["create_project -force zq_pynq_z2", "-part xc7z020clg400-1",
                 "connect_bd_intf_net axi_dma_0/M_AXIS_MM2S zq_top_0/s_axis_in",
                 "connect_bd_intf_net zq_top_0/m_axis_out axi_dma_0/S_AXIS_S2MM",
                 "connect_bd_intf_net ctrl_ic/M00_AXI zq_top_0/s_axi_control",
                 "connect_bd_intf_net mem_sc/M00_AXI ps7/S_AXI_HP1",
                 "connect_bd_net zq_top_0/interrupt irq_concat/In0",
                 "connect_bd_net axi_dma_0/s2mm_introut irq_concat/In2",
                 # interrupts behind an axi_intc on GP0, where pynq finds them (as base.tcl)
                 "connect_bd_net irq_concat/dout axi_intc_0/intr", "connect_bd_net axi_intc_0/irq ps7/IRQ_F2P",
                 "connect_bd_intf_net ctrl_ic/M02_AXI axi_intc_0/s_axi", "CONFIG.NUM_MI 3",
                 "connect_bd_net ps7/FCLK_CLK0 axi_intc_0/s_axi_aclk",
                 "connect_bd_net ps7/FCLK_CLK0 zq_top_0/ap_clk", "CONFIG.c_include_sg 0",
                 "CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ 100", "CONFIG.PCW_USE_S_AXI_HP0 1", "CONFIG.PCW_USE_S_AXI_HP2 1",
                 "launch_runs impl_1 -to_step write_bitstream", "EXIT 0"]:
        assert line in log, line
    assert "connect_bd_net irq_concat/dout ps7/IRQ_F2P" not in log       # PYNQ could not discover it
    assert ("apply_bd_automation" in log) == bool(board_files)
    assert ("CONFIG.PCW_UIPARAM_DDR_PARTNO Custom" in log) == (not board_files)      # base.tcl's DDR3 settings
