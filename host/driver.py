"""The accelerator driver: ONE implementation for the PYNQ board and the simulations.

:class:`ZqDriver` is the frame protocol; it stands on four rooms, each a module:

========================  =========================================================================
``registers.py``          the register file: the map (``zynqflow.spec.engine``), its two variants
                          (the HLS engine, the RTL twin), the check against the ``.hwh``
``ddr.py``                DDR buffers: the weight image, the scratch area, alignment and window
``dma.py``                the DMA channels (pynq's driver): errors, waits, interrupts, soft reset
``stats.py``              statistics: cycles, DRAM bytes, host time, throughput, timing labels
========================  =========================================================================

and is told what to do by one :class:`~zynqflow.host.config.DriverConfig` (``config.py``); the
PYNQ objects (overlay, ``allocate``, clocks) come from ``board.py`` (or a simulation).

It only uses the PYNQ API: ``overlay.ip_dict`` and ``getattr(overlay, name)`` to find the engine
(type ``...:zq_top:...``) and the AXI DMA, ``ip.mmio.read/write``, pynq's DMA channels,
``allocate(shape, dtype)`` buffers (``physical_address``, ``flush()``, ``invalidate()``,
``freebuffer()``), ``pynq.Interrupt`` objects (asyncio methods), and a clock. On the board these
are ``pynq.Overlay``, ``pynq.allocate`` and ``time.monotonic``; in simulation
:mod:`zynqflow.sim.world.pynq_shim` (the RTL twin under cocotb) or :mod:`zynqflow.sim.csim.hls_host` (the
HLS C-sim engine behind Vitis's generated ``ap_ctrl_hs`` block, either generation). Get a driver with
:func:`zynqflow.host.board.open_driver` (the one way: it reads and checks the PL clock first); this
module imports nothing from ``board``.

Opening (:class:`ZqDriver`), in this order, so that nothing is touched before it is known good:

1. the register offsets of the spec (for the variant the ``.hwh`` lists) against the ``.hwh``
   (:class:`RegisterMapMismatch`); ``weights.bin`` against the manifest (:class:`WeightImageError`);
2. a DMA an earlier process left halted or mid-transfer is reset (``raw_mmio``); pynq's DMA driver;
3. an engine an earlier process left busy (Ctrl-C during a stream, then ``--no-download``) is drained
   **before** any DDR buffer is allocated (its S2MM would otherwise write into them);
4. the weight image and the scratch area in DDR (:class:`DdrBufferError`), the image flushed,
   ``wts`` / ``act`` written (64-bit, low word first).

Before the first frame, ``net_id`` must equal the manifest's ID (:class:`NetworkIdMismatch`) and
``build_params`` / ``engine_info`` the build it was exported for (:class:`EngineMismatch`). The
engine writes them at the start of a frame (the RTL twin at ``ap_start``); one that still reads 0
after ``ap_start`` (the Vitis HLS engine: its output registers update when a frame ends) gets a
one-beat probe frame, answered with an error frame without computing. ``engine_info`` bit
``rtl_twin`` then fixes the register map.

The frame protocol: :meth:`ZqDriver.classify` (one ``ap_start`` per frame, ``ap_done`` seen once:
it is clear-on-read) and :meth:`ZqDriver.stream` (``auto_restart``; the MM2S transfer of frame k+1
while the engine computes frame k; results in order; ``auto_restart`` cleared before the last
frame's result can leave, then ``ap_idle`` checked: Vitis's block reports no per-call ``ap_done``
under ``auto_restart``, so a stream waits on the DMA only), and their asyncio versions, which wait
on the interrupts (the engine's ``ap_done`` through ``IP_ISR``: cleared by reading it and writing
back what was read, right for Vitis 2022.1's clear-on-read and later toggle-on-write; the DMA
channels' completion **and error** interrupts).
An error frame raises :class:`EngineStatusError` with ``status`` decoded; after ``address_range``,
``weight_image`` or an AXI4 error the weight image is copied and flushed again and ``wts``/``act``
rewritten. ``wts``/``act`` are compared with the buffers before every call and rewritten when the
engine lost them (a PL reset; the network ID is checked again then).

Recovery (:meth:`ZqDriver.recover`): after a DMA error (the DMA halts until reset) or a timeout,
soft-reset the DMA, stop ``auto_restart``, drain the engine (take what it still sends; end a
partial input frame with a one-beat packet) until ``ap_idle``; then the frames without a result
are sent again (at most ``retries`` per call). :meth:`ZqDriver.close` does the same when a
transfer may still be posted, before it frees any buffer.
"""

from __future__ import annotations

import time

import numpy as np

from zynqflow.spec import engine as E

from .config import DEFAULT_RETRIES, DRAIN_ROUNDS, TIMEOUT_FRAMES, DriverConfig  # noqa: F401 - DEFAULT_RETRIES re-exported
from .ddr import DdrBuffers
from .dma import DmaChannels, reset_left_over
from .errors import (AcceleratorError, AcceleratorTimeout, BackendError, DmaError, EngineMismatch, EngineStatusError,
                     HostError, NetworkIdMismatch)
from .manifest import Export
from .registers import ISR_AP_DONE, RegisterFile, RegMap, check_register_offsets, decode_status, engine_from_hwh
from .stats import FrameResults, HostTime, RunStats

ERROR_LOGIT = E.ERROR_LOGIT   # an error frame is N_CLASSES beats of this value
# a status flag that says the engine's DDR is not what the driver put there: reload and rewrite
MEMORY_FLAGS = ("axi_read_error", "axi_write_error", "address_range", "weight_image")


# ---- the overlay's IPs -----------------------------------------------------------------
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


def ip_driver(overlay, name: str, source: str):
    """``getattr(overlay, name)`` (``a/b`` for hierarchies): pynq builds the IP's driver. pynq's
    ``RuntimeError("Overlay not currently loaded")`` (another bitstream in the PL, e.g. after
    ``--no-download``) becomes a :class:`BackendError` that says so."""
    obj = overlay
    try:
        for part in name.split("/"):
            obj = getattr(obj, part)
    except RuntimeError as e:
        raise BackendError(f"{source}: pynq cannot reach {name} ({e}): the PL holds another bitstream (the base "
                           "overlay after a reboot?). Load this one: drop --no-download (download=True)") from e
    return obj



def run_sync(coro):
    """Run a coroutine that never suspends (the polling paths) to its end, without an event
    loop: works inside a running loop too (Jupyter)."""
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    coro.close()
    raise RuntimeError("internal error: a synchronous driver call tried to suspend")


def with_note(e: HostError, note: str) -> HostError:
    """The same kind of error with ``note`` appended to its message."""
    new = e.__class__.__new__(e.__class__)
    HostError.__init__(new, f"{e}; {note}")
    new.__dict__.update(e.__dict__)
    return new


def _fields(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


class ZqDriver:
    """The engine behind a PYNQ(-compatible) overlay (module docstring).

    ``overlay``, ``allocate``: pynq's (or a simulation's); ``export``: the manifest and the weight
    image; ``config``: :class:`DriverConfig`; ``clock``: seconds (board ``time.monotonic``, simulation
    its simulated time); ``raw_mmio(name)``: an MMIO over an IP without its pynq driver (board:
    ``pynq.MMIO``): with it, a DMA or an engine an earlier process left running is brought back
    before anything is allocated; ``outside_clock()``: wall time spent outside this host's own
    work (a simulator), left out of the host time; ``weights``: the weight image (default the
    export's ``weights.bin``, checked)."""

    def __init__(self, overlay, allocate, export: Export, config: DriverConfig = DriverConfig(), *,
                 clock=time.monotonic, raw_mmio=None, outside_clock=None, weights: bytes | None = None,
                 idle_hook=None):
        cfg = self.config = config
        self.export, self.now = export, clock
        self.source = cfg.source or "the loaded overlay"
        self.accel_name, self.dma_name = find_ips(overlay, cfg.accel, cfg.dma)
        ips = getattr(overlay, "ip_dict", {}) or {}
        # 1. the register map for the variant the .hwh describes, checked against it before any access
        hwh = ips.get(self.accel_name, {}).get("registers") if cfg.check_registers else None
        from_hwh = engine_from_hwh(hwh)
        self.engine_from = "given" if cfg.engine else ("the .hwh" if from_hwh else "")
        regmap = RegMap(cfg.engine or from_hwh or "hls")
        self.engine_known = bool(cfg.engine or from_hwh)
        self.registers_checked = check_register_offsets(
            dict(regmap.offsets), hwh, ip=self.accel_name, regmap_source=regmap.source,
            hwh_source=f"the .hwh of {self.source}")
        # ... and the weight image against the manifest (still nothing written)
        self.weights = bytes(weights) if weights is not None else export.weight_image()
        self.fclk_hz = cfg.fclk_hz
        self.frame_time_s = export.frame_cycles() / self.fclk_hz
        self.timeout_s = (float(cfg.timeout_s) if cfg.timeout_s is not None
                          else max(cfg.min_timeout_s, TIMEOUT_FRAMES * self.frame_time_s))
        # recovery: how long the engine may stay quiet before it is taken to wait for input
        self.drain_wait_s = max(4 * self.frame_time_s, cfg.min_timeout_s / 50)
        self.idle_hook = idle_hook          # called in poll loops (board: None = busy poll, as pynq does)
        self.simulated = cfg.simulated
        self.clock_label = ("simulated time (accelerator and DMA only, no host time)" if cfg.simulated
                            else "wall time (host work included)")
        self._tm = HostTime(outside_clock)
        ip = ip_driver(overlay, self.accel_name, self.source)
        self.regs = RegisterFile(getattr(ip, "mmio", ip), regmap)
        self.accel_irq = getattr(ip, "interrupt", None)
        self._irq_on = False                # this call waits on the interrupts
        self._dirty = False                 # a call did not finish: recover before the next one
        self.open_log: list[str] = []       # what opening did, in order
        self.close_note: str | None = None  # what close() had to do first
        self.recoveries: list[dict] = []
        self.id_checked = self.id_probed = False
        self.hw_id = self.hw_build_params = self.hw_engine_info = None
        self.bases_rewritten = 0            # times the engine had lost wts/act (a PL reset) and got them again
        self.ddr = DdrBuffers(allocate, export, self.weights, self.source)
        self.dma = None
        # 2. the DMA: reset if an earlier process left it halted or busy, then pynq's driver
        self.open_reset = None
        if raw_mmio is not None:
            self.open_reset = reset_left_over(raw_mmio(self.dma_name), self.now, self.timeout_s, self.source)
            if self.open_reset:
                self.open_log.append("DMA reset (left halted or mid-transfer)")
        try:
            self.dma = DmaChannels(ip_driver(overlay, self.dma_name, self.source), self.now, self.timeout_s,
                                   self._tm, self.describe, self.source, idle_hook)
            if self.open_reset:             # reset behind pynq's back: its (cached) channels restart
                self.dma.start()
            if self.has_interrupts:
                self.dma.enable_error_interrupts()
            # 3. an engine left busy is drained before anything big is allocated
            if raw_mmio is not None and not self.regs.idle():
                run_sync(self._recover("the engine was busy on open (an earlier process stopped mid-frame)"))
                self.open_log.append("engine drained")
            # 4. DDR: the weight image and the scratch area; wts/act
            self.ddr.allocate_engine_memory()
            self.open_log.append("engine memory allocated")
            self._write_bases()
            self.open_log.append("wts/act written")
        except BaseException:
            self.close()
            raise

    # ---- what the driver knows ----------------------------------------------------------
    @property
    def engine(self) -> str:
        """``"rtl"`` (the RTL twin) or ``"hls"``; final after the first frame (``engine_info``)."""
        return self.regs.engine

    @property
    def measures(self) -> bool:
        """The engine measures cycles and DRAM traffic (the RTL twin's registers)."""
        return self.engine == "rtl"

    @property
    def in_bytes(self) -> int:
        return self.export.bytes_per_frame

    @property
    def classes(self) -> int:
        return self.export.num_classes

    @property
    def bases(self) -> dict[str, int]:
        return self.ddr.bases

    @property
    def weight_loads(self) -> int:
        return self.ddr.weight_loads

    @property
    def has_interrupts(self) -> bool:
        """The design wires the accelerator's and both DMA channels' interrupts (pynq found them)."""
        return self.accel_irq is not None and self.dma is not None and self.dma.has_interrupts

    def registers(self) -> dict:
        return self.regs.snapshot()

    def describe(self, regs: dict | None = None) -> str:
        return self.regs.describe(regs)

    # ---- the engine's DDR addresses -------------------------------------------------------
    def _write_bases(self, names=("wts", "act")) -> None:
        for n in names:
            self.regs.write64(n, self.bases[n])

    def _ensure_bases(self) -> list[str]:
        """Rewrite ``wts``/``act`` where the engine does not hold the buffers' addresses (after a
        PL reset); only those, and the network ID and engine build are checked again before the
        next frame (someone may have loaded another bitstream). Returns the names rewritten."""
        lost = [n for n, a in self.bases.items()
                if self.regs.read(n) != a & 0xFFFFFFFF or self.regs.read(f"{n}_hi") != a >> 32]
        if lost:
            self._write_bases(lost)
            self.bases_rewritten += 1
            self.id_checked = False
        return lost

    def load_weights(self) -> None:
        """Copy the weight image into its DDR buffer again, flush it and rewrite ``wts`` and ``act``
        (after a failed header check the engine has dropped any weight cache and reads it all again)."""
        self.ddr.load_weights()
        self._write_bases()

    # ---- network ID and engine build --------------------------------------------------------
    def check_network_id(self) -> int:
        """Raise :class:`NetworkIdMismatch` unless ``net_id`` equals the manifest's ID, then
        :class:`EngineMismatch` unless ``build_params`` and ``engine_info`` are what the manifest
        was exported for. Sends no input frame (at most the one-beat probe)."""
        if self.id_checked:
            return self.hw_id
        want = self.export.network_id
        hw = self.regs.read("net_id")
        if hw == 0:
            # nothing has started the engine since reset: net_id is written at the start of a frame
            self.regs.write("AP_CTRL", self.regs.map.mask("ap_start"))
            hw = self.regs.read("net_id")
            if hw == 0:
                hw = run_sync(self._probe_id())
        self.hw_id = hw
        if hw != want:
            raise NetworkIdMismatch(hw, want, self.source, str(self.export.manifest_path))
        self.check_engine()
        self.id_checked = True
        return hw

    def check_engine(self) -> str:
        """``engine_info`` and ``build_params`` against the manifest; ``engine_info`` bit
        ``rtl_twin`` chooses the register map. Returns the engine variant."""
        info, bp = self.regs.read("engine_info"), self.regs.read("build_params")
        self.hw_engine_info, self.hw_build_params = info, bp
        d = E.decode_engine_info(info)
        man = self.export.manifest_path
        if d["spec_version"] != E.SPEC_VERSION:
            raise EngineMismatch(f"the accelerator ({self.source}) implements engine specification version "
                                 f"{d['spec_version']} (engine_info=0x{info:08x}), this host version {E.SPEC_VERSION} "
                                 "(zynqflow.spec.engine): deploy the host package and export of the checkout the "
                                 "bitstream was built with, or rebuild the bitstream; no frame was sent")
        engine = "rtl" if d["rtl_twin"] else "hls"
        if engine != self.regs.engine or not self.engine_known:
            self.regs.map, self.engine_from = RegMap(engine), "engine_info"
        else:
            self.engine_from += ", confirmed by engine_info"
        self.engine_known = True
        problems = []
        if bp != self.export.build_params:
            problems.append(f"build_params 0x{bp:08x} ({_fields(E.decode_build_params(bp))}), the manifest "
                            f"0x{self.export.build_params:08x} ({_fields(E.decode_build_params(self.export.build_params))})")
        want = self.export.engine_info[engine]
        if info != want:
            problems.append(f"engine_info 0x{info:08x} ({_fields(d)}), the manifest 0x{want:08x} "
                            f"({_fields(E.decode_engine_info(want))})")
        if problems:
            raise EngineMismatch(f"the accelerator ({self.source}) is not the engine {man} was exported for: "
                                 f"{'; '.join(problems)}. Load the bitstream built from this export (same N_PE x "
                                 "N_CI and memory budgets), or use the export the bitstream was built from; no "
                                 "frame was sent")
        return engine

    async def _probe_id(self) -> int:
        """One-beat frame (TLAST on the first beat): not computed, answered with an error frame."""
        self.id_probed = True
        ib, ob = self.ddr.probe()
        ib[0] = 0
        self._dirty = True
        self.dma.transfer(self.dma.recv, ob, "S2MM (network-ID probe)", -1)
        self.dma.transfer(self.dma.send, ib, "MM2S (network-ID probe)", -1)
        await self.dma.wait(self.dma.send, "MM2S (network-ID probe)", -1)
        await self.dma.wait(self.dma.recv, "S2MM (network-ID probe)", -1)
        self._dirty = False
        return self.regs.read("net_id")

    # ---- closing ------------------------------------------------------------------------
    def close(self) -> None:
        """Stop safely, then free every buffer: when a transfer may still be posted (Ctrl-C during a
        stream, a call that did not finish), the DMA is reset and the engine drained first; an S2MM
        transfer left posted would otherwise write into memory that the next ``allocate()`` hands
        out again (pynq reuses freed CMA addresses)."""
        self.close_note = None
        try:
            if self.dma is not None and self.ddr.ddr and (self._dirty or self.dma.posted()):
                run_sync(self._recover("close() with a transfer in flight"))
                self.close_note = "recovered before freeing the buffers"
        except HostError as e:
            self.close_note = f"could not drain the engine ({e}); the DMA was reset"
            try:
                self.dma.reset()
            except HostError:
                pass
        finally:
            self.ddr.free_all()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- waiting for the engine -------------------------------------------------------------
    async def _wait_ap_done(self, frame: int, aio: bool = False) -> None:
        """ap_done after a frame: polled in AP_CTRL (clear-on-read, seen once), or, with the
        interrupt, ISR bit 0 (cleared by writing it back: toggle-on-write) and then AP_CTRL read."""
        irq = self.accel_irq if aio and self._irq_on else None
        done = self.regs.map.mask("ap_done")
        with self._tm.part("wait"):
            deadline = self.now() + self.timeout_s
            while True:
                if irq is not None:
                    if self.regs.read("ISR") & ISR_AP_DONE:
                        self.regs.write("ISR", ISR_AP_DONE)
                        self.regs.read("AP_CTRL")
                        return
                elif self.regs.read("AP_CTRL") & done:
                    return
                if self.now() > deadline:
                    raise AcceleratorTimeout(f"frame {frame}: output received but ap_done never set within "
                                             f"{self.timeout_s:.3g} s; accelerator {self.describe()}")
                await self.dma.sleep(irq, deadline, aio)

    def _check_frames_done(self, fd0: int, n: int) -> int:
        deadline = self.now() + self.timeout_s
        while True:
            d = (self.regs.read("frames_done") - fd0) & 0xFFFFFFFF
            if d == n:
                return d
            if d > n or self.now() > deadline:
                raise AcceleratorError(f"frames_done advanced by {d} for {n} frames: the engine did not produce "
                                       f"exactly one result per frame; accelerator {self.describe()}")
            if self.idle_hook is not None:
                self.idle_hook()

    # ---- frames in and out ------------------------------------------------------------------
    def _send(self, buf, frame: np.ndarray, k: int) -> None:
        with self._tm.part("copy"):
            buf[:] = np.ascontiguousarray(frame, dtype=np.uint8).reshape(-1)
        self.dma.transfer(self.dma.send, buf, "MM2S (input)", k)

    def _take(self, buf, k: int) -> np.ndarray:
        n = getattr(self.dma.recv, "transferred", None)
        if n not in (None, 0) and n != self.classes * 4:
            raise AcceleratorError(f"frame {k}: the engine sent {n} bytes, expected {self.classes * 4} "
                                   f"({self.classes} logits); accelerator {self.describe()}")
        with self._tm.part("copy"):
            v = np.array(buf, dtype=np.int64)
        if np.all(v == ERROR_LOGIT):
            raise self._status_error(k, self.regs.read("status"), f"the engine answered with an error frame "
                                                                  f"(all logits {ERROR_LOGIT})")
        return v

    def _status_error(self, k: int, st: int, what: str) -> EngineStatusError:
        """What the status flags of frame k mean, with this driver's buffers named."""
        flags = E.decode_status(st)["flags"]
        b = self.bases
        ctx = {"short_frame": f"the input frame had fewer than {self.in_bytes} bytes",
               "long_frame": f"the input frame had more than {self.in_bytes} bytes",
               "address_range": f"the driver's buffers are at wts=0x{b['wts']:08x}, act=0x{b['act']:08x} (checked "
                                "on open): the engine's registers were overwritten",
               "weight_image": f"the image in DDR at 0x{b['wts']:08x} is not the one this driver loaded: the "
                               "buffer was overwritten, or the image was not flushed to DDR"}
        why = "; ".join(f"{f}: {E.STATUS[f].doc}" + (f" ({ctx[f]})" if f in ctx else "") for f in flags) \
            or "no status flag set"
        return EngineStatusError(f"frame {k}: {what}: status {decode_status(st)}: {why}; accelerator "
                                 f"{self.describe()}", st, flags, k)

    def _frames(self, frames) -> np.ndarray:
        f = np.asarray(frames)
        if f.dtype != np.uint8:
            raise TypeError(f"frames must be uint8, got {f.dtype}")
        if f.shape == self.export.input_shape:
            f = f[None]
        if f.ndim != 4 or f.shape[1:] != self.export.input_shape:
            raise ValueError(f"frames are {f.shape}, the engine takes N x {self.export.input_shape} (HWC)")
        return f

    # ---- the frame protocol -----------------------------------------------------------------
    async def _classify_from(self, frames, r: FrameResults, aio: bool) -> None:
        """One ``ap_start`` per frame (ap_ctrl_hs handshake), checking status after each."""
        ins, outs = self.ddr.frames()
        send, recv, regs = self.dma.send, self.dma.recv, self.regs
        regs.write("AP_CTRL", 0)                          # no auto_restart: one frame per ap_start
        for k in range(r.next, len(frames)):
            if aio and self._irq_on:
                regs.write("ISR", regs.read("ISR"))       # toggle-on-write: clear what is pending
            regs.write("AP_CTRL", regs.map.mask("ap_start"))
            self.dma.transfer(recv, outs[0], "S2MM (output)", k)
            r.t_send[k] = self.now()
            self._send(ins[0], frames[k], k)
            await self.dma.wait(send, "MM2S (input)", k, aio, self._irq_on)
            if aio and self._irq_on:          # the accelerator's interrupt says the frame is done
                await self._wait_ap_done(k, aio)
            await self.dma.wait(recv, "S2MM (output)", k, aio, self._irq_on)
            r.t_done[k] = self.now()
            r.logits[k] = self._take(outs[0], k)
            if not (aio and self._irq_on):
                await self._wait_ap_done(k, aio)
            st = regs.read("status")
            if st & E.STATUS_FLAGS_MASK:
                raise self._status_error(k, st, "the engine flagged the frame")
            r.cycles.append(regs.read_optional("cycles_last"))
            for name, vals in r.measured.items():
                vals.append(regs.read_optional(name))
            r.next = k + 1

    async def _stream_from(self, frames, r: FrameResults, aio: bool) -> None:
        """Frames back to back with ``auto_restart``: the MM2S transfer of frame k+1 runs while the
        engine computes frame k. The end: ``auto_restart`` is cleared once the last frame's call runs
        (its MM2S transfer complete: the engine takes its input only inside a call) and **before** that
        frame's S2MM transfer is posted, so the call cannot end (its output has nowhere to go) before
        the engine knows not to restart: one call per frame, however late the host is."""
        ins, outs = self.ddr.frames()
        send, recv = self.dma.send, self.dma.recv
        n, k0 = len(frames), r.next
        last = n - 1
        self.regs.write("AP_CTRL", self.regs.map.mask("ap_start", "auto_restart"))
        if k0 < last:
            self.dma.transfer(recv, outs[k0 % 2], "S2MM (output)", k0)
        r.t_send[k0] = self.now()
        self._send(ins[k0 % 2], frames[k0], k0)
        for k in range(k0, n):
            await self.dma.wait(send, "MM2S (input)", k, aio, self._irq_on)      # frame k is in the engine
            if k < last:                                                          # overlap: send k+1 now
                r.t_send[k + 1] = self.now()
                self._send(ins[(k + 1) % 2], frames[k + 1], k + 1)
            else:                                                                 # the last call runs: stop,
                self.regs.write("AP_CTRL", 0)                                     # then let its result out
                self.dma.transfer(recv, outs[k % 2], "S2MM (output)", k)
            await self.dma.wait(recv, "S2MM (output)", k, aio, self._irq_on)
            r.t_done[k] = self.now()
            r.logits[k] = self._take(outs[k % 2], k)
            r.next = k + 1
            if k + 1 < last:
                self.dma.transfer(recv, outs[(k + 1) % 2], "S2MM (output)", k + 1)

    async def _end_of_stream(self, aio: bool) -> dict | None:
        """After a stream's last result the engine must go idle (``ap_idle``). If it does not within
        a few frame times, it started another call (a stream FIFO between the engine and the DMA took
        the last result before ``auto_restart`` was cleared, and the host was a frame late): that call
        waits for input, so it is ended with a one-beat frame and drained (:meth:`_recover`). Returns
        the recovery, or None when the engine was idle."""
        deadline = self.now() + self.drain_wait_s
        with self._tm.part("wait"):
            while not self.regs.idle():
                if self.now() > deadline:
                    break
                await self.dma.sleep(None, deadline, aio)
            else:
                return None
        rec = await self._recover("the engine was busy after the stream's last result (it restarted: auto_restart "
                                  "was still set when it ended the last frame's call); ended with a one-beat frame",
                                  aio)
        rec["end_of_stream"] = True
        return rec

    # ---- recovery -----------------------------------------------------------------------------
    async def _drain(self, rec: dict, aio: bool) -> None:
        ib, ob = self.ddr.probe()
        send, recv = self.dma.send, self.dma.recv
        for _ in range(DRAIN_ROUNDS):
            if self.regs.idle():
                return
            self.dma.transfer(recv, ob, "S2MM (recovery)", -1)
            if not await self.dma.wait(recv, "S2MM (recovery)", -1, aio, self._irq_on, quiet_s=self.drain_wait_s):
                # nothing came: the engine waits for (the rest of) an input frame; a one-beat
                # packet with TLAST ends it, and the engine answers with an error frame
                ib[0] = 0
                self.dma.transfer(send, ib, "MM2S (recovery)", -1)
                rec["flushes"] += 1
                await self.dma.wait(send, "MM2S (recovery)", -1, aio, self._irq_on)
                await self.dma.wait(recv, "S2MM (recovery)", -1, aio, self._irq_on)
            rec["drained"] += 1
        if not self.regs.idle():
            raise AcceleratorError(f"recovery: the accelerator is not idle after {DRAIN_ROUNDS} drained frames "
                                   f"({self.describe()}); reload the bitstream ({self.source})")

    async def _recover(self, why, aio: bool = False) -> dict:
        rec = dict(reason=f"{type(why).__name__}: {why}" if isinstance(why, BaseException) else str(why),
                   t=self.now(), dmasr_mm2s=self.dma.dmasr(self.dma.send), dmasr_s2mm=self.dma.dmasr(self.dma.recv),
                   drained=0, flushes=0)
        with self._tm.part("recovery"):
            self.dma.reset()
            self.regs.write("AP_CTRL", 0)                       # stop auto_restart
            await self._drain(rec, aio)
            rec["bases_rewritten"] = self._ensure_bases() if self.ddr.ddr else []
        self._dirty = False
        self.recoveries.append(rec)
        return rec

    def recover(self, why: str = "requested") -> dict:
        """Soft-reset the DMA, restart its channels, drain the engine until ``ap_idle``.
        Returns what was done: the DMASRs found, output frames drained, one-beat frames sent."""
        return run_sync(self._recover(why))

    # ---- running frames -----------------------------------------------------------------------
    async def _run(self, mode: str, frames, aio: bool) -> RunStats:
        frames = self._frames(frames)
        self._tm.begin()
        n = len(frames)
        r = FrameResults(n, self.classes)
        recs: list[dict] = []
        m0, s0 = self.dma.mm2s_transfers, self.dma.s2mm_transfers
        if self._dirty and self.config.recover:
            await self._recover("the previous call on this accelerator did not finish", aio)
        lost = self._ensure_bases()                # the engine loses wts/act with a PL reset ...
        if lost and self.config.recover:           # ... and the AXI DMA its state: restart it before sending
            rec = await self._recover(f"the engine had lost {' and '.join(lost)} (a PL reset): rewritten, the AXI "
                                      "DMA reset and restarted", aio)
            rec.update(frame=0, pl_reset=True)
            recs.append(rec)
        self.check_network_id()
        if n == 0:
            return RunStats(mode, r.logits, r.t_send, r.t_done, 0.0, engine=self.engine, host=self._tm.per_frame(0),
                            recoveries=recs)
        irq = self._irq_on = aio and self.has_interrupts
        if irq:
            self.regs.write("ISR", self.regs.read("ISR"))
            self.regs.write("IER", ISR_AP_DONE)
            self.regs.write("GIE", 1)
        proto = self._classify_from if mode == "classify" else self._stream_from
        fd_start = self.regs.read("frames_done")
        extra_calls = 0                            # calls the engine made past the last frame, ended by recovery
        t0 = self.now()
        try:
            while True:
                fd0, k0 = self.regs.read("frames_done"), r.next
                self._dirty = True
                try:
                    await proto(frames, r, aio)
                    self._check_frames_done(fd0, n - k0)
                    if mode == "stream":
                        rec = await self._end_of_stream(aio)
                        if rec is not None:
                            rec["frame"] = n
                            recs.append(rec)
                            extra_calls += rec["flushes"]
                    self._dirty = False
                    break
                except (DmaError, AcceleratorTimeout) as e:
                    if not self.config.recover:
                        raise
                    try:
                        rec = await self._recover(e, aio)
                    except HostError as failed:
                        raise with_note(e, f"recovery failed: {failed}") from failed
                    rec["frame"] = r.next
                    recs.append(rec)
                    errors = sum(1 for x in recs if not x.get("pl_reset"))
                    if errors > self.config.retries:
                        raise with_note(e, f"the driver recovered (DMA reset, engine drained) but {errors} "
                                           f"errors in this call exceed retries={self.config.retries}") from e
                except AcceleratorError as e:      # the engine answered wrongly: back to a known state, no retry
                    if self.config.recover:
                        try:
                            await self._recover(e, aio)
                        except HostError as failed:
                            raise with_note(e, f"recovery failed: {failed}") from failed
                        if isinstance(e, EngineStatusError) and set(e.flags) & set(MEMORY_FLAGS):
                            self.load_weights()
                            raise with_note(e, "the driver drained the engine, copied the weight image into its "
                                               "buffer again, flushed it and rewrote wts/act: the next call runs "
                                               "on it") from e
                    raise
        finally:
            if irq:
                self._irq_on = False
                self.regs.write("GIE", 0)
        seconds = self.now() - t0
        regs = self.registers()
        fd = ((regs["frames_done"] - fd_start) & 0xFFFFFFFF) - extra_calls
        if mode == "classify":
            cycles, measured = r.cycles, r.measured
        else:
            cycles, measured = [regs["cycles_last"]], {k: [regs[k]] for k in r.measured}
        return RunStats(mode, r.logits, r.t_send, r.t_done, seconds, cycles, measured["dram_rd_bytes"],
                        measured["dram_wr_bytes"], measured["dram_stall_cycles"], self.engine, fd, regs,
                        host=self._tm.per_frame(n), recoveries=recs, mm2s_transfers=self.dma.mm2s_transfers - m0,
                        s2mm_transfers=self.dma.s2mm_transfers - s0, interrupts=irq)

    def classify(self, frames) -> RunStats:
        """One ``ap_start`` per frame (ap_ctrl_hs handshake), checking status after each (polled)."""
        return run_sync(self._run("classify", frames, aio=False))

    def stream(self, frames) -> RunStats:
        """Frames back to back with ``auto_restart`` (polled). Results in input order."""
        return run_sync(self._run("stream", frames, aio=False))

    async def classify_async(self, frames) -> RunStats:
        """:meth:`classify`, waiting on the interrupts (``ap_done``, DMA completion and errors)
        where the design wires them: the CPU is free for other asyncio tasks meanwhile."""
        return await self._run("classify", frames, aio=True)

    async def stream_async(self, frames) -> RunStats:
        """:meth:`stream`, waiting on the DMA interrupts where wired."""
        return await self._run("stream", frames, aio=True)
