"""The accelerator driver: ONE implementation for the PYNQ board and the RTL simulation.

:class:`ZqDriver` programs the engine's registers (offsets from
``rtl/regmap.json``), checks the network ID, and moves frames with an AXI DMA
(simple mode, no scatter-gather): MM2S -> ``s_axis_in``, ``m_axis_out`` ->
S2MM. It only uses the PYNQ API:

* ``overlay.ip_dict`` and ``getattr(overlay, name)`` to find the engine
  (type ``...:zq_top:...``) and the DMA (``...:axi_dma:...``);
* ``ip.mmio.read(offset)`` / ``ip.mmio.write(offset, value)``;
* ``dma.sendchannel`` / ``dma.recvchannel``: ``transfer(buffer)``, ``idle``,
  ``error``, ``wait()``, ``transferred``;
* ``allocate(shape, dtype)`` buffers with ``flush()``, ``invalidate()``,
  ``physical_address``, ``freebuffer()``;
* a clock (seconds) for timeouts and latencies.

On the board these are ``pynq.Overlay``, ``pynq.allocate`` and
``time.monotonic`` (:func:`zynqflow.host.board.open_board`); in simulation
they are :mod:`zynqflow.sim.sim_shim` over cocotbext-axi, whose clock is the
simulated time. Nothing else differs.

Safety: before the first frame the ``net_id`` register must equal the
manifest's ``network_id_int`` (else :class:`NetworkIdMismatch`, naming both
IDs and both files). The engine latches ``net_id`` at ``ap_start`` (rtl/); an
engine that reads 0 after ``ap_start`` (the Vitis HLS one publishes it with
a frame's results) gets a one-beat probe frame, which it answers with an
error frame without computing, and is checked then. Every DMA wait polls
``idle`` against a deadline; a timeout raises :class:`AcceleratorTimeout`
with the ``status`` and ``AP_CTRL`` registers (and ``frames_done``,
``cycles_last``, the DMA status register where available).

Two ways to run frames:

* :meth:`ZqDriver.classify`: one ``ap_start`` per frame; checks ``ap_done``
  and ``status`` and reads ``cycles_last`` after each frame.
* :meth:`ZqDriver.stream`: ``auto_restart``; while the engine computes frame
  k the DMA already sends frame k+1 (two input and two output buffers,
  ping-pong). Results come back in order, one per frame (S2MM transfers
  end at each frame's TLAST; ``frames_done`` must advance by exactly the
  number of frames).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .errors import AcceleratorError, AcceleratorTimeout, NetworkIdMismatch
from .manifest import Export, RegMap

ERROR_LOGIT = -32768          # an error frame is N_CLASSES beats of this value
DEFAULT_FCLK_HZ = 100e6       # FCLK0 of the board design
TIMEOUT_FRAMES = 50           # default timeout: this many estimated frame times ...
MIN_TIMEOUT_S = 0.5           # ... but at least this much on the board (Linux scheduling)


@dataclass
class RunStats:
    """What one :meth:`ZqDriver.classify` / :meth:`ZqDriver.stream` call measured
    (times in the driver clock's seconds: wall time on the board, simulated
    time in the RTL simulation)."""

    mode: str
    logits: np.ndarray                 # int64 N x classes, in input order
    t_send: np.ndarray                 # clock when each frame's MM2S transfer was started
    t_done: np.ndarray                 # clock when each frame's S2MM transfer was seen complete
    seconds: float                     # first transfer to last result
    cycles_last: list[int] = field(default_factory=list)   # per frame (classify) or the last (stream)
    frames_done: int = 0               # how far the frames_done register advanced
    registers: dict = field(default_factory=dict)           # after the run

    @property
    def latency_s(self) -> np.ndarray:
        return self.t_done - self.t_send

    @property
    def fps(self) -> float:
        return len(self.logits) / self.seconds if self.seconds > 0 else float("nan")


def find_ips(overlay, accel: str | None = None, dma: str | None = None) -> tuple[str, str]:
    """Names of the engine and of the AXI DMA in ``overlay.ip_dict``."""
    ips = getattr(overlay, "ip_dict", {}) or {}

    def pick(explicit, key, what):
        if explicit:
            if explicit not in ips:
                raise AcceleratorError(f"no IP '{explicit}' in the overlay (IPs: {', '.join(sorted(ips)) or 'none'})")
            return explicit
        hits = [n for n, d in ips.items() if f":{key}:" in str(d.get("type", "")) or n.split("/")[-1].startswith(key)]
        if len(hits) != 1:
            found = "none" if not hits else ", ".join(hits)
            raise AcceleratorError(f"expected one {what} ({key}) in the overlay, found {found} "
                                   f"(IPs: {', '.join(sorted(ips)) or 'none'}); name it explicitly")
        return hits[0]

    return pick(accel, "zq_top", "accelerator"), pick(dma, "axi_dma", "AXI DMA")


def _attr(obj, dotted: str):
    for part in dotted.split("/"):
        obj = getattr(obj, part)
    return obj


def _free(buf) -> None:
    for name in ("freebuffer", "close"):
        f = getattr(buf, name, None)
        if callable(f):
            f()
            return


class ZqDriver:
    """The engine behind a PYNQ(-compatible) overlay. See the module docstring."""

    def __init__(self, overlay, allocate, export: Export, regmap: RegMap, *, clock=time.monotonic,
                 timeout_s: float | None = None, min_timeout_s: float = MIN_TIMEOUT_S,
                 fclk_hz: float = DEFAULT_FCLK_HZ, source: str = "", accel: str | None = None,
                 dma: str | None = None, probe_id: bool = True, idle_hook=None):
        self.export, self.regmap = export, regmap
        self.source = source or "the loaded overlay"
        self.accel_name, self.dma_name = find_ips(overlay, accel, dma)
        ip = _attr(overlay, self.accel_name)
        self.mmio = getattr(ip, "mmio", ip)
        d = _attr(overlay, self.dma_name)
        self.send, self.recv = d.sendchannel, d.recvchannel
        self.allocate = allocate
        self.now = clock
        self.fclk_hz = fclk_hz
        self.frame_time_s = export.frame_cycles() / fclk_hz
        self.timeout_s = float(timeout_s) if timeout_s is not None else max(min_timeout_s,
                                                                            TIMEOUT_FRAMES * self.frame_time_s)
        self.probe_id = probe_id
        self.idle_hook = idle_hook          # called in poll loops (board: None = busy poll, as pynq does)
        self.in_bytes = export.bytes_per_frame
        self.classes = export.num_classes
        self.id_checked = False
        self.id_probed = False
        self.hw_id: int | None = None
        self._bufs = None

    # ---- registers --------------------------------------------------------
    def rd(self, name: str) -> int:
        return int(self.mmio.read(self.regmap[name])) & 0xFFFFFFFF

    def wr(self, name: str, value: int) -> None:
        self.mmio.write(self.regmap[name], int(value) & 0xFFFFFFFF)

    def registers(self) -> dict:
        """AP_CTRL (read clears ap_done/ap_ready), status, frames_done, cycles_last, net_id, build_params."""
        return {n: self.rd(n) for n in ("AP_CTRL", "status", "frames_done", "cycles_last", "net_id",
                                        "build_params")}

    def describe(self, regs: dict | None = None) -> str:
        try:
            r = regs or self.registers()
        except Exception as e:  # noqa: BLE001 - the registers may be unreachable too
            return f"registers unreadable ({type(e).__name__}: {e})"
        st = r["status"]
        flags = [n for b, n in ((0, "short frame"), (1, "long frame")) if st >> b & 1]
        return (f"status=0x{st:08x} ({', '.join(flags) if flags else 'ok'}{f', {st >> 16} error frames' if st >> 16 else ''}), "
                f"AP_CTRL={self.regmap.decode_ctrl(r['AP_CTRL'])}, frames_done={r['frames_done']}, "
                f"cycles_last={r['cycles_last']}")

    @staticmethod
    def _dma_status(ch) -> str:
        m, off = getattr(ch, "_mmio", None), getattr(ch, "_offset", None)
        if m is not None and off is not None:
            try:
                return f"DMASR=0x{int(m.read(off + 4)):08x}"
            except Exception:  # noqa: BLE001
                return "DMASR unreadable"
        st = getattr(ch, "status", None)
        return f"DMA {st}" if st else ""

    # ---- network ID -------------------------------------------------------
    def check_network_id(self) -> int:
        """Raise :class:`NetworkIdMismatch` unless ``net_id`` equals the manifest's ID.
        Sends no input frame (at most the one-beat probe, see the module docstring)."""
        if self.id_checked:
            return self.hw_id
        want = self.export.network_id
        hw = self.rd("net_id")
        if hw == 0:
            # nothing has started the engine since reset: net_id is latched at ap_start
            self.wr("AP_CTRL", self.regmap.mask("ap_start"))
            hw = self.rd("net_id")
            if hw == 0 and self.probe_id:
                hw = self._probe_id()
        self.hw_id = hw
        if hw != want:
            raise NetworkIdMismatch(hw, want, self.source, str(self.export.manifest_path))
        self.id_checked = True
        return hw

    def _probe_id(self) -> int:
        """One-beat frame (TLAST on the first beat): not computed, answered with an error frame."""
        self.id_probed = True
        ib = self.allocate(shape=(1,), dtype=np.uint32)
        ob = self.allocate(shape=(self.classes,), dtype=np.int32)
        try:
            ib[0] = 0
            ib.flush()
            self.recv.transfer(ob)
            self.send.transfer(ib)
            self._wait(self.send, "MM2S (network-ID probe)", -1)
            self._wait(self.recv, "S2MM (network-ID probe)", -1)
        finally:
            _free(ib)
            _free(ob)
        return self.rd("net_id")

    # ---- DMA --------------------------------------------------------------
    def _buffers(self):
        if self._bufs is None:
            ins = [self.allocate(shape=(self.in_bytes,), dtype=np.uint8) for _ in range(2)]
            outs = [self.allocate(shape=(self.classes,), dtype=np.int32) for _ in range(2)]
            for b in ins + outs:
                if getattr(b, "physical_address", 0) % 4:
                    raise AcceleratorError(f"DMA buffer at 0x{b.physical_address:x} is not 32-bit aligned")
            self._bufs = (ins, outs)
        return self._bufs

    def close(self) -> None:
        if self._bufs is not None:
            for b in self._bufs[0] + self._bufs[1]:
                _free(b)
            self._bufs = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _wait(self, ch, what: str, frame: int) -> None:
        """Poll ``ch.idle`` until the transfer is done, the DMA reports an error, or the deadline."""
        t0 = self.now()
        deadline = t0 + self.timeout_s
        while not ch.idle:
            if getattr(ch, "error", False):
                raise AcceleratorError(f"AXI DMA {what} error at frame {frame} ({self._dma_status(ch)}); "
                                       f"accelerator {self.describe()}")
            if self.now() > deadline:
                dma = self._dma_status(ch)
                raise AcceleratorTimeout(
                    f"timeout: the DMA {what} transfer of frame {frame} did not complete within "
                    f"{self.timeout_s:.3g} s ({self.source}); accelerator {self.describe()}"
                    f"{'; ' + dma if dma else ''}")
            if self.idle_hook is not None:
                self.idle_hook()
        ch.wait()

    def _send(self, buf, frame: np.ndarray) -> None:
        buf[:] = np.ascontiguousarray(frame, dtype=np.uint8).reshape(-1)
        buf.flush()
        self.send.transfer(buf)

    def _take(self, buf, k: int) -> np.ndarray:
        buf.invalidate()
        n = getattr(self.recv, "transferred", None)
        if n not in (None, 0) and n != self.classes * 4:
            raise AcceleratorError(f"frame {k}: the engine sent {n} bytes, expected {self.classes * 4} "
                                   f"({self.classes} logits); accelerator {self.describe()}")
        v = np.array(buf, dtype=np.int64)
        if np.all(v == ERROR_LOGIT):
            raise AcceleratorError(f"frame {k}: the engine answered with an error frame (all logits "
                                   f"{ERROR_LOGIT}: it saw a short or long input frame); accelerator {self.describe()}")
        return v

    def _frames(self, frames) -> np.ndarray:
        f = np.asarray(frames)
        if f.dtype != np.uint8:
            raise TypeError(f"frames must be uint8, got {f.dtype}")
        if f.shape == self.export.input_shape:
            f = f[None]
        if f.ndim != 4 or f.shape[1:] != self.export.input_shape:
            raise ValueError(f"frames are {f.shape}, the engine takes N x {self.export.input_shape} (HWC)")
        return f

    def _check_frames_done(self, fd0: int, n: int) -> int:
        deadline = self.now() + self.timeout_s
        while True:
            d = (self.rd("frames_done") - fd0) & 0xFFFFFFFF
            if d == n:
                return d
            if d > n or self.now() > deadline:
                raise AcceleratorError(f"frames_done advanced by {d} for {n} frames: the engine did not produce "
                                       f"exactly one result per frame; accelerator {self.describe()}")
            if self.idle_hook is not None:
                self.idle_hook()

    # ---- running frames ---------------------------------------------------
    def classify(self, frames) -> RunStats:
        """One ``ap_start`` per frame (ap_ctrl_hs handshake), checking status after each."""
        frames = self._frames(frames)
        self.check_network_id()
        n = len(frames)
        ins, outs = self._buffers()
        logits = np.zeros((n, self.classes), np.int64)
        t_send, t_done, cycles = np.zeros(n), np.zeros(n), []
        start = self.regmap.mask("ap_start")
        done_bit = self.regmap.mask("ap_done")
        fd0 = self.rd("frames_done")
        self.wr("AP_CTRL", 0)                      # no auto_restart: one frame per ap_start
        t0 = self.now()
        for k in range(n):
            self.wr("AP_CTRL", start)
            self.recv.transfer(outs[0])
            t_send[k] = self.now()
            self._send(ins[0], frames[k])
            self._wait(self.send, "MM2S (input)", k)
            self._wait(self.recv, "S2MM (output)", k)
            t_done[k] = self.now()
            logits[k] = self._take(outs[0], k)
            deadline = self.now() + self.timeout_s
            while not (self.rd("AP_CTRL") & done_bit):   # ap_done is clear-on-read: seen once
                if self.now() > deadline:
                    raise AcceleratorTimeout(f"frame {k}: output received but ap_done never set within "
                                             f"{self.timeout_s:.3g} s; accelerator {self.describe()}")
                if self.idle_hook is not None:
                    self.idle_hook()
            st = self.rd("status")
            if st & 0x3:
                raise AcceleratorError(f"frame {k}: status 0x{st:08x} (short/long frame); accelerator "
                                       f"{self.describe()}")
            cycles.append(self.rd("cycles_last"))
        seconds = self.now() - t0
        fd = self._check_frames_done(fd0, n)
        return RunStats("classify", logits, t_send, t_done, seconds, cycles, fd, self.registers())

    def stream(self, frames) -> RunStats:
        """Frames back to back with ``auto_restart``: the MM2S transfer of frame k+1
        runs while the engine computes frame k. Results in input order."""
        frames = self._frames(frames)
        self.check_network_id()
        n = len(frames)
        logits = np.zeros((n, self.classes), np.int64)
        t_send, t_done = np.zeros(n), np.zeros(n)
        if n == 0:
            return RunStats("stream", logits, t_send, t_done, 0.0)
        ins, outs = self._buffers()
        fd0 = self.rd("frames_done")
        self.wr("AP_CTRL", self.regmap.mask("ap_start", "auto_restart"))
        t0 = self.now()
        self.recv.transfer(outs[0])
        t_send[0] = self.now()
        self._send(ins[0], frames[0])
        try:
            for k in range(n):
                self._wait(self.send, "MM2S (input)", k)          # frame k is in the engine
                if k + 1 < n:                                     # overlap: send k+1 while k computes
                    t_send[k + 1] = self.now()
                    self._send(ins[(k + 1) % 2], frames[k + 1])
                else:
                    self.wr("AP_CTRL", 0)                         # last frame in: stop auto_restart
                self._wait(self.recv, "S2MM (output)", k)
                t_done[k] = self.now()
                logits[k] = self._take(outs[k % 2], k)
                if k + 1 < n:
                    self.recv.transfer(outs[(k + 1) % 2])
        except BaseException:
            try:
                self.wr("AP_CTRL", 0)
            except Exception:  # noqa: BLE001
                pass
            raise
        seconds = self.now() - t0
        fd = self._check_frames_done(fd0, n)
        regs = self.registers()
        return RunStats("stream", logits, t_send, t_done, seconds, [regs["cycles_last"]], fd, regs)


def percentiles(lat_s, q=(50, 90, 99)) -> dict[str, float]:
    """Latency percentiles in milliseconds: {'p50': .., 'p90': .., 'p99': ..}."""
    a = np.asarray(lat_s, dtype=np.float64)
    if a.size == 0:
        return {f"p{p}": float("nan") for p in q}
    return {f"p{p}": float(np.percentile(a, p) * 1e3) for p in q}
