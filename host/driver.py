"""The accelerator driver: ONE implementation for the PYNQ board and the RTL simulation.

:class:`ZqDriver` programs the engine's registers (names, offsets and bits
from the engine specification :mod:`zynqflow.spec.engine` only: :class:`RegMap`),
checks them against the bitstream's ``.hwh``, loads the weight image into
DDR, checks the network ID and the engine build, and moves frames with an AXI
DMA (simple mode, no scatter-gather): MM2S -> ``s_axis_in``, ``m_axis_out`` ->
S2MM. The engine itself reads DDR through its two AXI4 masters: the weight
image (``m_axi_wts``, register ``wts``) and the activation scratch area
(``m_axi_act``, register ``act``). It only uses the PYNQ API:

* ``overlay.ip_dict`` (types, and the ``registers`` pynq reads from the
  ``.hwh``) and ``getattr(overlay, name)`` to find the engine (type
  ``...:zq_top:...``) and the DMA (``...:axi_dma:...``);
* ``ip.mmio.read(offset)`` / ``ip.mmio.write(offset, value)``;
* pynq's DMA channel driver (``dma.sendchannel`` / ``dma.recvchannel``):
  ``transfer(buffer)``, ``idle``, ``error``, ``running``, ``wait()``,
  ``transferred``, ``start()``; for recovery and status the channel's
  ``_mmio`` and ``_offset`` (pynq has no reset API: DMACR and DMASR are
  written and read directly, PG021);
* ``allocate(shape, dtype)`` buffers (physically contiguous) with
  ``physical_address``, ``flush()`` and ``freebuffer()`` (pynq's ``transfer()``
  flushes an MM2S buffer and its ``wait()`` invalidates an S2MM one; the
  weight image is flushed by the driver);
* ``pynq.Interrupt`` objects (``ip.interrupt``, the channels' ``_interrupt``)
  in the asyncio methods, when the design wires them (board/pynq_z2.tcl:
  through an axi_intc);
* a clock (seconds) for timeouts and latencies.

On the board these are ``pynq.Overlay``, ``pynq.allocate`` and
``time.monotonic`` (:func:`zynqflow.host.board.open_board`); in simulation
they are :mod:`zynqflow.sim.sim_shim` over cocotbext-axi, whose clock is the
simulated time. Nothing else differs.

The open sequence (:class:`ZqDriver`):

1. the engine's register offsets (the specification's, for the engine variant
   the ``.hwh`` lists: the RTL twin has registers the HLS engine has not) are
   compared with the ``.hwh`` (:func:`check_register_offsets`,
   :class:`RegisterMapMismatch`); nothing has been written yet;
2. ``weights.bin`` is read and its header checked against the manifest
   (:meth:`Export.weight_image`, :class:`WeightImageError` naming the file
   and the field);
3. a DMA an earlier process left halted is reset (``raw_mmio``), pynq's DMA
   driver is built;
4. two DDR buffers are allocated: the weight image and the activation scratch
   area (``memory.scratch_bytes``; none when 0: ``act`` then gets the weight
   buffer's address, which the engine never uses); each must be 4 KiB aligned
   and end inside the engine's 512 MiB DDR window (:class:`DdrBufferError`
   naming the buffer); the image is copied in and flushed, and ``wts`` / ``act``
   are written (64-bit registers, low word first). The engine checks the
   image's header at every frame (a weight cache is kept while the check
   passes, and dropped by a failed check or a reset).

Before the first frame the ``net_id`` register must equal the manifest's
``network_id_int`` (else :class:`NetworkIdMismatch`, naming both IDs and both
files), and ``build_params`` / ``engine_info`` must be what the manifest was
exported for (else :class:`EngineMismatch`). These are written at the start of
every frame: the RTL twin at ``ap_start``; an engine that still reads 0 after
``ap_start`` (the Vitis HLS one) gets a one-beat probe frame, which it answers
with an error frame without computing, and is checked then. ``engine_info``
bit ``rtl_twin`` then says which register map applies (the RTL-only registers
``cycles_last``, ``dram_*``, ``layer_*`` read None on the HLS engine). Every
wait has a deadline: a timeout raises :class:`AcceleratorTimeout` with the
``status`` and ``AP_CTRL`` registers (and ``frames_done``, ``cycles_last``,
the DMA status register).

An error frame (every logit ``ERROR_LOGIT``) raises :class:`EngineStatusError`
with the ``status`` flags decoded (``zynqflow.spec.engine.STATUS_BITS``).
After ``address_range``, ``weight_image`` or an AXI4 error, the driver copies
the weight image into its buffer again, flushes it and rewrites ``wts`` and
``act`` (so the next call runs on a good image); the engine's registers are
also compared with the buffers' addresses before every call and rewritten when
the engine lost them (``ap_rst_n``: the DDR contents survive a PL reset, the
registers do not; the AXI DMA is restarted and the network ID checked again
then).

Recovery (:meth:`ZqDriver.recover`): after a DMA error (the AXI DMA halts
and stays halted until reset) or a timeout (the channel stays busy), the
driver soft-resets the DMA (DMACR bit 2, both channels), restarts both
channels, stops ``auto_restart`` and drains the engine: it takes whatever
output the engine still has and, if the engine waits for (the rest of) an
input frame, ends that frame with a one-beat packet (answered with an error
frame), until ``ap_idle``. Then the frames without a result are sent again
(at most ``retries`` recoveries per call); the results are complete and in
order. pynq's ``RuntimeError``/``ValueError`` become :class:`DmaError`.

Two ways to run frames (and their asyncio versions, which wait on the
interrupts instead of polling):

* :meth:`ZqDriver.classify`: one ``ap_start`` per frame; checks ``ap_done``
  and ``status`` and reads ``cycles_last`` and the DRAM counters (RTL twin)
  after each frame.
* :meth:`ZqDriver.stream`: ``auto_restart``; while the engine computes frame
  k the DMA already sends frame k+1 (two input and two output buffers,
  ping-pong). Results come back in order, one per frame (S2MM transfers
  end at each frame's TLAST; ``frames_done`` must advance by exactly the
  number of frames).

Times: ``RunStats.seconds``/latencies are in the driver clock (board: wall
time, host work included; simulation: simulated time, accelerator and DMA
only). ``RunStats.host`` is the host's own per-frame work, measured with
``time.perf_counter`` (copies, DMA calls with their cache flush/invalidate,
Python), without the time spent waiting for the hardware or inside a
simulator. Cycles: the RTL twin's ``cycles_last`` is *measured*; the HLS
engine has no cycle counter, and figures derived from the manifest's
``cycles_model`` say *modelled*.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from zynqflow.spec import engine as E

from .errors import (AcceleratorError, AcceleratorTimeout, DdrBufferError, DmaError, EngineMismatch,
                     EngineStatusError, HostError, NetworkIdMismatch, RegisterMapMismatch)
from .manifest import Export

ERROR_LOGIT = E.ERROR_LOGIT   # an error frame is N_CLASSES beats of this value
DEFAULT_FCLK_HZ = 100e6       # FCLK0 of the board design (board/pynq_z2.tcl); the board reads the real one
TIMEOUT_FRAMES = 50           # default timeout: this many estimated frame times ...
MIN_TIMEOUT_S = 0.5           # ... but at least this much on the board (Linux scheduling)
DEFAULT_RETRIES = 2           # recoveries (and re-sends) per classify/stream call
DRAIN_ROUNDS = 4              # recovery: output frames taken / one-beat frames sent, at most

# AXI DMA (PG021) direct register mode, relative to a channel's offset (MM2S 0x00, S2MM 0x30)
DMACR, DMASR, DMA_LENGTH = 0x00, 0x04, 0x28
DMACR_RS, DMACR_RESET = 0x1, 0x4
DMASR_ERRORS, DMASR_IOC = 0x70, 0x1000
DMASR_BITS = ((0, "Halted"), (1, "Idle"), (4, "DMAIntErr"), (5, "DMASlvErr"), (6, "DMADecErr"),
              (12, "IOC_Irq"), (14, "Err_Irq"))
ISR_AP_DONE = {b.name: b for b in E.ISR_BITS}["ap_done"].mask   # IER/ISR bit 0: ap_done
# registers every engine has, read by registers(); the RTL twin's measured figures on top
SHARED_REGS = ("AP_CTRL", "status", "frames_done", "net_id", "build_params", "engine_info", "wts", "act")
MEASURED_REGS = ("cycles_last", "dram_stall_cycles", "dram_rd_bytes", "dram_wr_bytes")
# a status flag that says the engine's DDR is not what the driver put there: reload and rewrite
MEMORY_FLAGS = ("axi_read_error", "axi_write_error", "address_range", "weight_image")
MEASURED = "measured (RTL twin)"
MODELLED = "modelled (manifest cycles_model; the HLS engine has no cycle counter)"

# how Vitis HLS names a register in the .hwh (block-level registers; a 64-bit argument <name> as
# <name>_1 (low word) and <name>_2 (high word); an output's ap_vld word as <name>_ctrl)
HWH_ALIASES = {"AP_CTRL": ("CTRL",), "GIE": ("GIER",), "IER": ("IP_IER",), "ISR": ("IP_ISR",)}
RTL_ONLY = tuple(r.name for r in E.REGISTERS if "hls" not in r.engines)


class RegMap:
    """The register map of one engine variant, from the engine specification
    (:func:`zynqflow.spec.engine.offsets`): ``engine`` ``"hls"`` (the registers both engines
    have) or ``"rtl"`` (the RTL twin: also ``cycles_last``, ``dram_*``, ``layer_*``).
    ``offsets`` by name (64-bit registers as ``<name>`` and ``<name>_hi``, ap_vld words as
    ``<name>_ctrl``); AP_CTRL bits by name (:meth:`mask`)."""

    def __init__(self, engine: str = "hls"):
        if engine not in ("hls", "rtl"):
            raise ValueError(f"engine {engine!r}: 'hls' (the Vitis HLS engine) or 'rtl' (the RTL twin)")
        self.engine = engine
        self.offsets = E.offsets(engine)
        self.source = f"zynqflow.spec.engine (spec version {E.SPEC_VERSION}, {engine} register map)"

    def __getitem__(self, name: str) -> int:
        return self.offsets[name]

    def __contains__(self, name: str) -> bool:
        return name in self.offsets

    @staticmethod
    def mask(*bits: str) -> int:
        return E.ap_ctrl_mask(*bits)

    @staticmethod
    def decode_ctrl(value: int) -> str:
        on = [b.name for b in E.AP_CTRL_BITS if value & b.mask]
        return f"0x{value:08x} ({' '.join(on) if on else 'no bits set'})"

    def __repr__(self) -> str:
        return f"RegMap({self.engine!r})"


def engine_from_hwh(hwh_registers: dict | None) -> str | None:
    """The engine variant the ``.hwh``'s register list describes: ``"rtl"`` when it lists a
    register only the RTL twin has, ``"hls"`` otherwise; None without register information."""
    if not hwh_registers:
        return None
    names = {str(k).lower() for k in hwh_registers}
    return "rtl" if any(n.lower() in names for n in RTL_ONLY) else "hls"


def _hwh_names(name: str) -> tuple[str, ...]:
    if name.endswith("_hi") and name[:-3] in E.REG and E.REG[name[:-3]].kind == "in64":
        return (name, f"{name[:-3]}_2")
    return (name, *HWH_ALIASES.get(name, ()), f"{name}_1")


def decode_status(value: int) -> str:
    """``status`` as text: the flags set (spec names) and the error-frame count."""
    d = E.decode_status(value)
    parts = list(d["flags"]) or ["ok"]
    if d["error_frames"]:
        parts.append(f"{d['error_frames']} error frames")
    return f"0x{value & 0xFFFFFFFF:08x} ({', '.join(parts)})"


def _fields(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items())


def decode_dmasr(v: int) -> str:
    on = [n for b, n in DMASR_BITS if v >> b & 1]
    return f"DMASR=0x{v:08x} ({' '.join(on) if on else 'running, busy'})"


def check_register_offsets(offsets: dict[str, int], hwh_registers: dict | None, *, ip: str = "the accelerator",
                           regmap_source: str = "the engine specification",
                           hwh_source: str = "the .hwh") -> dict[str, int]:
    """Compare the driver's registers (name -> byte offset, :class:`RegMap`) with those pynq
    read from the ``.hwh`` (``overlay.ip_dict[ip]["registers"]``: name -> {"address_offset", ...}).
    Registers are matched by name (case-insensitive; ``AP_CTRL``/``GIE``/``IER``/``ISR``
    also as Vitis HLS's ``CTRL``/``GIER``/``IP_IER``/``IP_ISR``; a 64-bit argument ``wts``
    as ``wts_1`` and its ``wts_hi`` as ``wts_2``, Vitis's two 32-bit registers); registers the
    ``.hwh`` does not list are not compared. Returns the compared names -> offset; {} when the
    overlay has no register information.
    Raises :class:`RegisterMapMismatch` naming each register and both offsets."""
    if not hwh_registers:
        return {}
    by_lower = {str(k).lower(): k for k in hwh_registers}
    compared, bad = {}, []
    for name, off in offsets.items():
        key = next((by_lower[c.lower()] for c in _hwh_names(name) if c.lower() in by_lower), None)
        if key is None:
            continue
        hw = int(hwh_registers[key]["address_offset"])
        compared[name] = hw
        if hw != int(off):
            bad.append(f"{name} at 0x{int(off):02x} in {regmap_source} but '{key}' at 0x{hw:02x} in {hwh_source}")
    if bad:
        raise RegisterMapMismatch(f"register offsets of {ip} differ: {'; '.join(bad)}. The bitstream and this "
                                  "host's engine specification come from different engine versions: rebuild the "
                                  "bitstream, or deploy the host package of the checkout it was built with. No "
                                  "register was written.")
    if not compared:
        raise RegisterMapMismatch(f"none of the registers of {regmap_source} ({', '.join(sorted(offsets))}) is in "
                                  f"{hwh_source} for {ip} (it lists {', '.join(sorted(map(str, hwh_registers)))}): "
                                  "is this the zynqflow engine?")
    return compared


@dataclass
class RunStats:
    """What one :meth:`ZqDriver.classify` / :meth:`ZqDriver.stream` call measured
    (times in the driver clock's seconds: wall time on the board, simulated
    time in the RTL simulation; ``host``: the host's own work, see the module docstring)."""

    mode: str
    logits: np.ndarray                 # int64 N x classes, in input order
    t_send: np.ndarray                 # clock when each frame's MM2S transfer was started
    t_done: np.ndarray                 # clock when each frame's S2MM transfer was seen complete
    seconds: float                     # first transfer to last result
    cycles_last: list = field(default_factory=list)  # per frame (classify) or the last (stream); None: HLS engine
    dram_rd_bytes: list = field(default_factory=list)      # as cycles_last (RTL twin: measured; else None)
    dram_wr_bytes: list = field(default_factory=list)
    dram_stall_cycles: list = field(default_factory=list)
    engine: str = ""                   # "rtl" (the RTL twin, measures) or "hls"
    frames_done: int = 0               # how far the frames_done register advanced (recoveries included)
    registers: dict = field(default_factory=dict)           # after the run
    host: dict = field(default_factory=dict)                # host_*_seconds_per_frame
    recoveries: list = field(default_factory=list)          # one dict per recovery during the call
    mm2s_transfers: int = 0            # transfers the driver started (re-sends, probes, drains included)
    s2mm_transfers: int = 0
    interrupts: bool = False           # waits used the interrupts

    @property
    def latency_s(self) -> np.ndarray:
        return self.t_done - self.t_send

    @property
    def fps(self) -> float:
        return len(self.logits) / self.seconds if self.seconds > 0 else float("nan")


class _Frames:
    """Results of a call in progress: ``next`` is the first frame without a result."""

    def __init__(self, n: int, classes: int):
        self.logits = np.zeros((n, classes), np.int64)
        self.t_send, self.t_done = np.zeros(n), np.zeros(n)
        self.measured: dict[str, list] = {k: [] for k in MEASURED_REGS if k != "cycles_last"}
        self.cycles: list = []
        self.next = 0


class _HostTime:
    """The driver's own time (``time.perf_counter``), by part: wall time minus the time
    ``outside()`` counts (a simulator), each part exclusive of the parts nested in it."""

    PARTS = ("wait", "copy", "dma", "recovery")

    def __init__(self, outside=None):
        self.outside = outside or (lambda: 0.0)
        self.begin()

    def _own(self) -> float:
        return time.perf_counter() - self.outside()

    def begin(self) -> None:
        self.t0 = self._own()
        self.acc = dict.fromkeys(self.PARTS, 0.0)
        self._stack: list[float] = []          # per open part: time of the parts nested in it
        self._in_recovery = False

    @contextmanager
    def part(self, key: str):
        if self._in_recovery:                  # everything in a recovery counts as recovery
            yield
            return
        t = self._own()
        self._stack.append(0.0)
        self._in_recovery = key == "recovery"
        try:
            yield
        finally:
            self._in_recovery = False
            dt = self._own() - t
            nested = self._stack.pop()
            self.acc[key] += dt - nested
            if self._stack:
                self._stack[-1] += dt

    def per_frame(self, n: int) -> dict:
        total = self._own() - self.t0
        host = total - self.acc["wait"] - self.acc["recovery"]
        f = (lambda v: v / n) if n else (lambda v: float("nan"))
        return dict(host_seconds_per_frame=f(host), host_copy_seconds_per_frame=f(self.acc["copy"]),
                    host_dma_seconds_per_frame=f(self.acc["dma"]),
                    host_driver_seconds_per_frame=f(host - self.acc["copy"] - self.acc["dma"]),
                    host_wait_seconds=self.acc["wait"], host_recovery_seconds=self.acc["recovery"])


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


def _at(frame: int) -> str:
    return f" of frame {frame}" if frame >= 0 else ""


def _run_sync(coro):
    """Run a coroutine that never suspends (the polling paths) to its end, without an event
    loop: works inside a running loop too (Jupyter)."""
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    coro.close()
    raise RuntimeError("internal error: a synchronous driver call tried to suspend")


def _with_note(e: HostError, note: str) -> HostError:
    """The same kind of error with ``note`` appended to its message."""
    new = e.__class__.__new__(e.__class__)
    HostError.__init__(new, f"{e}; {note}")
    new.__dict__.update(e.__dict__)
    return new


class ZqDriver:
    """The engine behind a PYNQ(-compatible) overlay. See the module docstring.

    ``engine``: ``"rtl"`` or ``"hls"`` to fix the register map (default: from the ``.hwh``,
    then from ``engine_info`` at the first frame). ``weights``: the weight image (default
    the export's ``weights.bin``, checked). ``retries``: recoveries per call after a DMA error
    or timeout (the frames without a result are sent again); ``recover=False`` leaves the DMA
    as the error left it (to inspect it).
    ``raw_mmio(name)``: an MMIO over an IP's registers without its pynq driver (board:
    ``pynq.MMIO``); with it, a DMA left halted with an error by an earlier process is reset
    before pynq's DMA driver starts it (which would otherwise wait for ever).
    ``outside_clock()``: seconds of wall time spent outside this host's own work (a
    simulator), left out of the host time. ``simulated``: the clock is simulated time (it holds
    no host time); ``clock_label`` says what the driver clock measures."""

    def __init__(self, overlay, allocate, export: Export, *, engine: str | None = None, clock=time.monotonic,
                 timeout_s: float | None = None, min_timeout_s: float = MIN_TIMEOUT_S,
                 fclk_hz: float = DEFAULT_FCLK_HZ, source: str = "", accel: str | None = None,
                 dma: str | None = None, probe_id: bool = True, idle_hook=None, retries: int = DEFAULT_RETRIES,
                 recover: bool = True, check_registers: bool = True, raw_mmio=None, outside_clock=None,
                 simulated: bool = False, clock_label: str = "", weights: bytes | None = None):
        self.export = export
        self.source = source or "the loaded overlay"
        self.accel_name, self.dma_name = find_ips(overlay, accel, dma)
        ips = getattr(overlay, "ip_dict", {}) or {}
        # 1. the register map: the specification's, for the variant the .hwh describes; checked
        # against the .hwh before any access
        hwh = ips.get(self.accel_name, {}).get("registers") if check_registers else None
        from_hwh = engine_from_hwh(hwh)
        self.engine_from = "given" if engine else ("the .hwh" if from_hwh else "")
        self.regmap = RegMap(engine or from_hwh or "hls")
        self.engine_known = bool(engine or from_hwh)
        self.registers_checked = check_register_offsets(
            dict(self.regmap.offsets), hwh, ip=self.accel_name, regmap_source=self.regmap.source,
            hwh_source=f"the .hwh of {self.source}")
        # 2. the weight image, checked against the manifest (still nothing written)
        self.weights = bytes(weights) if weights is not None else export.weight_image()
        self.now = clock
        self.fclk_hz = fclk_hz
        self.frame_time_s = export.frame_cycles() / fclk_hz
        self.timeout_s = float(timeout_s) if timeout_s is not None else max(min_timeout_s,
                                                                            TIMEOUT_FRAMES * self.frame_time_s)
        # recovery: how long the engine may stay quiet before it is taken to wait for input
        self.drain_wait_s = max(4 * self.frame_time_s, min_timeout_s / 50)
        self.probe_id = probe_id
        self.idle_hook = idle_hook          # called in poll loops (board: None = busy poll, as pynq does)
        self.retries, self.recover_errors = int(retries), bool(recover)
        self.simulated = bool(simulated)
        self.clock_label = clock_label or ("simulated time (accelerator and DMA only, no host time)" if simulated
                                           else "wall time (host work included)")
        self._irq_on = False                # this call waits on the interrupts
        self._tm = _HostTime(outside_clock)
        ip = _attr(overlay, self.accel_name)
        self.mmio = getattr(ip, "mmio", ip)
        self.accel_irq = getattr(ip, "interrupt", None)
        self._dirty = False                 # a call did not finish: recover before the next one
        self.open_reset = None              # DMASRs found (and reset) on open, if a reset was needed
        # 3. the DMA: reset if an earlier process left it in error, then pynq's driver
        if raw_mmio is not None:
            self._reset_dma_on_open(raw_mmio(self.dma_name))
        d = _attr(overlay, self.dma_name)   # pynq builds its DMA driver here and starts the channels
        self.send, self.recv = d.sendchannel, d.recvchannel
        self.allocate = allocate
        self.in_bytes = export.bytes_per_frame
        self.classes = export.num_classes
        self.id_checked = False
        self.id_probed = False
        self.hw_id: int | None = None
        self.hw_build_params: int | None = None
        self.hw_engine_info: int | None = None
        self.recoveries: list[dict] = []
        self.mm2s_transfers = self.s2mm_transfers = 0
        self.bases_rewritten = 0            # times the engine had lost wts/act (a PL reset) and got them again
        self.weight_loads = 0               # the weight image copied into its buffer and flushed
        self._bufs = None
        self._scratch_bufs = None
        self._ddr: dict[str, object] = {}
        # 4. DDR: the weight image and the scratch area; wts/act written (after a drain, if the
        # engine is in the middle of a frame an earlier process left)
        try:
            self._allocate_ddr()
            if raw_mmio is not None and not self.rd("AP_CTRL") & self.regmap.mask("ap_idle"):
                self._dirty = True          # drained before the first call, which then writes wts/act
            else:
                self._write_bases()
        except BaseException:
            self.close()
            raise

    # ---- registers --------------------------------------------------------
    def rd(self, name: str) -> int:
        return int(self.mmio.read(self.regmap[name])) & 0xFFFFFFFF

    def wr(self, name: str, value: int) -> None:
        self.mmio.write(self.regmap[name], int(value) & 0xFFFFFFFF)

    def rd_optional(self, name: str) -> int | None:
        """A register some engines do not have (the HLS engine cannot count cycles): None then."""
        return self.rd(name) if name in self.regmap else None

    @property
    def engine(self) -> str:
        """``"rtl"`` (the RTL twin) or ``"hls"``; final after the first frame (``engine_info``)."""
        return self.regmap.engine

    @property
    def measures(self) -> bool:
        """The engine measures cycles and DRAM traffic (the RTL twin's registers)."""
        return self.regmap.engine == "rtl"

    def registers(self) -> dict:
        """AP_CTRL (read clears ap_done/ap_ready), status, frames_done, net_id, build_params,
        engine_info, wts, act; the RTL twin's measured cycles_last, dram_stall_cycles,
        dram_rd_bytes, dram_wr_bytes (None on the HLS engine)."""
        regs = {n: self.rd(n) for n in SHARED_REGS}
        regs.update({n: self.rd_optional(n) for n in MEASURED_REGS})
        return regs

    def describe(self, regs: dict | None = None) -> str:
        try:
            r = regs or self.registers()
        except Exception as e:  # noqa: BLE001 - the registers may be unreachable too
            return f"registers unreadable ({type(e).__name__}: {e})"
        return (f"status={decode_status(r['status'])}, AP_CTRL={self.regmap.decode_ctrl(r['AP_CTRL'])}, "
                f"frames_done={r['frames_done']}"
                + (f", cycles_last={r['cycles_last']}" if r.get("cycles_last") is not None else ""))

    # ---- DDR: the weight image and the activation scratch area --------------
    def _ddr_buffer(self, what: str, nbytes: int):
        """A physically contiguous buffer for an AXI4 master, checked: 4 KiB aligned, inside the window."""
        buf = self.allocate(shape=(nbytes,), dtype=np.uint8)
        try:
            addr = int(buf.physical_address)
            end = addr + nbytes
            if addr % E.ADDR_ALIGN or addr < 0 or end > E.DDR_WINDOW_BYTES:
                why = (f"is not {E.ADDR_ALIGN}-byte aligned" if addr % E.ADDR_ALIGN else
                       f"ends at 0x{end:x}, past the engine's DDR window (0x0 .. 0x{E.DDR_WINDOW_BYTES:x}, "
                       f"{E.DDR_WINDOW_BYTES >> 20} MiB)")
                raise DdrBufferError(
                    f"the {what} buffer ({nbytes} bytes) that allocate() returned at physical address 0x{addr:08x} "
                    f"{why}: the engine ({self.source}) refuses such an address (status bit address_range). "
                    "Free memory (other overlays' buffers) or enlarge the CMA area, and open the accelerator again")
        except BaseException:
            _free(buf)
            raise
        return buf

    def _allocate_ddr(self) -> None:
        ex = self.export
        if len(self.weights) != ex.weight_image_bytes:
            raise DdrBufferError(f"weight image of {len(self.weights)} bytes, {ex.manifest_path} says "
                                 f"{ex.weight_image_bytes} (memory.weight_image_bytes)")
        self._ddr["weights"] = self._ddr_buffer("weight image (m_axi_wts)", ex.weight_image_bytes)
        if ex.scratch_bytes:
            self._ddr["scratch"] = self._ddr_buffer("activation scratch (m_axi_act)", ex.scratch_bytes)
        self._copy_weights()

    def _copy_weights(self) -> None:
        buf = self._ddr["weights"]
        buf[:] = np.frombuffer(self.weights, np.uint8)
        buf.flush()                         # CPU cache -> DDR: the engine reads DDR, not the cache
        self.weight_loads += 1

    @property
    def bases(self) -> dict[str, int]:
        """The DDR addresses the engine gets: ``wts`` (the weight image) and ``act`` (the scratch
        area; without one, the weight buffer's address: valid and aligned, never used)."""
        w = int(self._ddr["weights"].physical_address)
        s = self._ddr.get("scratch")
        return dict(wts=w, act=int(s.physical_address) if s is not None else w)

    def _write_bases(self, names=("wts", "act")) -> None:
        for n in names:
            a = self.bases[n]
            self.wr(n, a & 0xFFFFFFFF)
            self.wr(f"{n}_hi", a >> 32)

    def _ensure_bases(self) -> list[str]:
        """Rewrite ``wts``/``act`` where the engine does not hold the buffers' addresses (after a
        PL reset); only those, and the network ID and engine build are checked again before the
        next frame (someone may have loaded another bitstream). Returns the names rewritten."""
        lost = [n for n, a in self.bases.items() if self.rd(n) != a & 0xFFFFFFFF or self.rd(f"{n}_hi") != a >> 32]
        if lost:
            self._write_bases(lost)
            self.bases_rewritten += 1
            self.id_checked = False         # a PL reset, or another bitstream loaded: check the engine again
        return lost

    def load_weights(self) -> None:
        """Copy the weight image into its DDR buffer again, flush it and rewrite ``wts`` and ``act``
        (after a failed header check the engine has dropped any weight cache and reads it all again)."""
        self._copy_weights()
        self._write_bases()

    @staticmethod
    def _dmasr(ch) -> int | None:
        m, off = getattr(ch, "_mmio", None), getattr(ch, "_offset", None)
        if m is None or off is None:
            return None
        try:
            return int(m.read(off + DMASR)) & 0xFFFFFFFF
        except Exception:  # noqa: BLE001
            return None

    def _dma_status(self, ch) -> str:
        v = self._dmasr(ch)
        if v is not None:
            return decode_dmasr(v)
        st = getattr(ch, "status", None)
        return f"DMA {st}" if st else ""

    # ---- DMA calls: pynq's errors become host errors ------------------------
    def _dma_call(self, fn, ch, what: str, frame: int, *args):
        try:
            return fn(*args)
        except HostError:
            raise
        except (RuntimeError, ValueError) as e:
            sr = self._dmasr(ch)
            raise DmaError(f"AXI DMA {what}{_at(frame)}: pynq: {e} ({decode_dmasr(sr) if sr is not None else 'DMASR unreadable'}"
                           f"); accelerator {self.describe()}", sr) from e

    def _transfer(self, ch, buf, what: str, frame: int) -> None:
        with self._tm.part("dma"):                    # pynq: register writes, and flush() for MM2S
            self._dma_call(ch.transfer, ch, what, frame, buf)
        if ch is self.send:
            self.mm2s_transfers += 1
        else:
            self.s2mm_transfers += 1

    def _reset_dma_on_open(self, m) -> None:
        srs = [int(m.read(off + DMASR)) & 0xFFFFFFFF for off in (0x00, 0x30)]
        # an error halts a channel until a reset, and pynq's start() would wait for it for ever;
        # a running channel that is not idle is mid-transfer (or never used): reset both
        if any(sr & DMASR_ERRORS or not sr & 0x1 and not sr & 0x2 for sr in srs):
            self.open_reset = dict(dmasr_mm2s=srs[0], dmasr_s2mm=srs[1])
            self._soft_reset(m, 0)

    def _soft_reset(self, m, off: int) -> None:
        """PG021 soft reset (DMACR bit 2 of either channel resets both), then wait for it to clear."""
        m.write(off + DMACR, DMACR_RESET)
        deadline = self.now() + self.timeout_s
        while (v := int(m.read(off + DMACR))) & DMACR_RESET:
            if self.now() > deadline:
                raise DmaError(f"the AXI DMA soft reset did not complete within {self.timeout_s:.3g} s "
                               f"(DMACR=0x{v:08x}); reload the bitstream ({self.source})")
            if self.idle_hook is not None:
                self.idle_hook()

    def reset_dma(self) -> None:
        """Soft-reset the AXI DMA and start both channels again (pynq has no API for it)."""
        m, off = getattr(self.send, "_mmio", None), getattr(self.send, "_offset", None)
        if m is None or off is None:
            raise DmaError("cannot reset the AXI DMA: its channels expose no registers (_mmio, _offset)")
        with self._tm.part("dma"):
            self._soft_reset(m, off)
            for ch, name in ((self.send, "MM2S"), (self.recv, "S2MM")):
                self._dma_call(ch.start, ch, f"{name} start after reset", -1)

    # ---- network ID and engine build ----------------------------------------
    def check_network_id(self) -> int:
        """Raise :class:`NetworkIdMismatch` unless ``net_id`` equals the manifest's ID, then
        :class:`EngineMismatch` unless ``build_params`` and ``engine_info`` are what the manifest
        was exported for (:meth:`check_engine`). Sends no input frame (at most the one-beat
        probe, see the module docstring)."""
        if self.id_checked:
            return self.hw_id
        want = self.export.network_id
        hw = self.rd("net_id")
        if hw == 0:
            # nothing has started the engine since reset: net_id is written at the start of a frame
            self.wr("AP_CTRL", self.regmap.mask("ap_start"))
            hw = self.rd("net_id")
            if hw == 0 and self.probe_id:
                hw = _run_sync(self._probe_id())
        self.hw_id = hw
        if hw != want:
            raise NetworkIdMismatch(hw, want, self.source, str(self.export.manifest_path))
        self.check_engine()
        self.id_checked = True
        return hw

    def check_engine(self) -> str:
        """``engine_info`` and ``build_params`` (valid once a frame has started, as ``net_id``)
        against the manifest; ``engine_info`` bit ``rtl_twin`` chooses the register map.
        Returns the engine variant."""
        info, bp = self.rd("engine_info"), self.rd("build_params")
        self.hw_engine_info, self.hw_build_params = info, bp
        d = E.decode_engine_info(info)
        man = self.export.manifest_path
        if d["spec_version"] != E.SPEC_VERSION:
            raise EngineMismatch(f"the accelerator ({self.source}) implements engine specification version "
                                 f"{d['spec_version']} (engine_info=0x{info:08x}), this host version {E.SPEC_VERSION} "
                                 "(zynqflow.spec.engine): deploy the host package and export of the checkout the "
                                 "bitstream was built with, or rebuild the bitstream; no frame was sent")
        engine = "rtl" if d["rtl_twin"] else "hls"
        if engine != self.regmap.engine or not self.engine_known:
            self.regmap, self.engine_from = RegMap(engine), "engine_info"
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

    def _scratch(self):
        """One-word input and one-frame output buffers (network-ID probe, recovery)."""
        if self._scratch_bufs is None:
            self._scratch_bufs = (self.allocate(shape=(1,), dtype=np.uint32),
                                  self.allocate(shape=(self.classes,), dtype=np.int32))
        return self._scratch_bufs

    async def _probe_id(self) -> int:
        """One-beat frame (TLAST on the first beat): not computed, answered with an error frame."""
        self.id_probed = True
        ib, ob = self._scratch()
        ib[0] = 0
        self._dirty = True
        self._transfer(self.recv, ob, "S2MM (network-ID probe)", -1)
        self._transfer(self.send, ib, "MM2S (network-ID probe)", -1)
        await self._wait_dma(self.send, "MM2S (network-ID probe)", -1)
        await self._wait_dma(self.recv, "S2MM (network-ID probe)", -1)
        self._dirty = False
        return self.rd("net_id")

    # ---- buffers ----------------------------------------------------------
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
        """Free the frame buffers and the DDR buffers (the engine must not run after this)."""
        for group in (self._bufs or ((), ())) + ((self._scratch_bufs or ()), tuple(self._ddr.values())):
            for b in group:
                _free(b)
        self._bufs = self._scratch_bufs = None
        self._ddr = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- waiting ----------------------------------------------------------
    @property
    def has_interrupts(self) -> bool:
        """The design wires the accelerator's and both DMA channels' interrupts (pynq found them)."""
        return all(x is not None for x in (self.accel_irq, getattr(self.send, "_interrupt", None),
                                           getattr(self.recv, "_interrupt", None)))

    async def _sleep(self, irq, deadline: float, aio: bool) -> None:
        """Between two polls: the interrupt (asyncio), a yield (asyncio without one), or the idle hook."""
        if irq is not None:
            try:
                await asyncio.wait_for(irq.wait(), timeout=max(1e-3, min(1.0, deadline - self.now())))
            except asyncio.TimeoutError:
                pass
        elif aio:
            await asyncio.sleep(0)
        elif self.idle_hook is not None:
            self.idle_hook()

    async def _wait_dma(self, ch, what: str, frame: int, aio: bool = False, quiet_s: float | None = None) -> bool:
        """Until ``ch``'s transfer completes, then pynq's ``wait()`` (S2MM: invalidate; ``transferred``).
        DMA error bits -> :class:`DmaError`; past the deadline -> :class:`AcceleratorTimeout`, or
        False with ``quiet_s`` (recovery: nothing came)."""
        irq = getattr(ch, "_interrupt", None) if aio and self._irq_on else None
        limit = self.timeout_s if quiet_s is None else quiet_s
        with self._tm.part("wait"):
            deadline = self.now() + limit
            while not ch.idle:
                if getattr(ch, "error", False):
                    sr = self._dmasr(ch)
                    st = decode_dmasr(sr) if sr is not None else self._dma_status(ch)
                    raise DmaError(f"AXI DMA {what} error{_at(frame).replace(' of ', ' at ')} ({st}); "
                                   f"accelerator {self.describe()}", sr)
                if self.now() > deadline:
                    if quiet_s is not None:
                        return False
                    dma = self._dma_status(ch)
                    raise AcceleratorTimeout(
                        f"timeout: the DMA {what} transfer{_at(frame)} did not complete within "
                        f"{limit:.3g} s ({self.source}); accelerator {self.describe()}"
                        f"{'; ' + dma if dma else ''}")
                await self._sleep(irq, deadline, aio)
        with self._tm.part("dma"):
            self._dma_call(ch.wait, ch, what, frame)
            if irq is not None:                       # the IOC interrupt is level: clear it
                ch._mmio.write(ch._offset + DMASR, DMASR_IOC)
        return True

    async def _wait_ap_done(self, frame: int, aio: bool = False) -> None:
        """ap_done after a frame: polled in AP_CTRL (clear-on-read, seen once), or, with the
        interrupt, ISR bit 0 (cleared by writing it back) and then AP_CTRL read to consume ap_done."""
        irq = self.accel_irq if aio and self._irq_on else None
        done = self.regmap.mask("ap_done")
        with self._tm.part("wait"):
            deadline = self.now() + self.timeout_s
            while True:
                if irq is not None:
                    if self.rd("ISR") & ISR_AP_DONE:
                        self.wr("ISR", ISR_AP_DONE)
                        self.rd("AP_CTRL")
                        return
                elif self.rd("AP_CTRL") & done:
                    return
                if self.now() > deadline:
                    raise AcceleratorTimeout(f"frame {frame}: output received but ap_done never set within "
                                             f"{self.timeout_s:.3g} s; accelerator {self.describe()}")
                await self._sleep(irq, deadline, aio)

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

    # ---- frames in and out ------------------------------------------------
    def _send(self, buf, frame: np.ndarray, k: int) -> None:
        with self._tm.part("copy"):
            buf[:] = np.ascontiguousarray(frame, dtype=np.uint8).reshape(-1)
        self._transfer(self.send, buf, "MM2S (input)", k)

    def _take(self, buf, k: int) -> np.ndarray:
        n = getattr(self.recv, "transferred", None)
        if n not in (None, 0) and n != self.classes * 4:
            raise AcceleratorError(f"frame {k}: the engine sent {n} bytes, expected {self.classes * 4} "
                                   f"({self.classes} logits); accelerator {self.describe()}")
        with self._tm.part("copy"):
            v = np.array(buf, dtype=np.int64)
        if np.all(v == ERROR_LOGIT):
            raise self._status_error(k, self.rd("status"), f"the engine answered with an error frame (all logits "
                                                           f"{ERROR_LOGIT})")
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

    # ---- the two protocols -------------------------------------------------
    async def _classify_from(self, frames, r: _Frames, aio: bool) -> None:
        """One ``ap_start`` per frame (ap_ctrl_hs handshake), checking status after each."""
        ins, outs = self._buffers()
        start = self.regmap.mask("ap_start")
        self.wr("AP_CTRL", 0)                          # no auto_restart: one frame per ap_start
        for k in range(r.next, len(frames)):
            if aio and self._irq_on:
                self.wr("ISR", self.rd("ISR"))        # toggle-on-write: clear what is pending
            self.wr("AP_CTRL", start)
            self._transfer(self.recv, outs[0], "S2MM (output)", k)
            r.t_send[k] = self.now()
            self._send(ins[0], frames[k], k)
            await self._wait_dma(self.send, "MM2S (input)", k, aio)
            if aio and self._irq_on:          # the accelerator's interrupt says the frame is done
                await self._wait_ap_done(k, aio)
            await self._wait_dma(self.recv, "S2MM (output)", k, aio)
            r.t_done[k] = self.now()
            r.logits[k] = self._take(outs[0], k)
            if not (aio and self._irq_on):
                await self._wait_ap_done(k, aio)
            st = self.rd("status")
            if st & E.STATUS_FLAGS_MASK:
                raise self._status_error(k, st, "the engine flagged the frame")
            r.cycles.append(self.rd_optional("cycles_last"))
            for name, vals in r.measured.items():
                vals.append(self.rd_optional(name))
            r.next = k + 1

    async def _stream_from(self, frames, r: _Frames, aio: bool) -> None:
        """Frames back to back with ``auto_restart``: the MM2S transfer of frame k+1
        runs while the engine computes frame k."""
        ins, outs = self._buffers()
        n, k0 = len(frames), r.next
        self.wr("AP_CTRL", self.regmap.mask("ap_start", "auto_restart"))
        self._transfer(self.recv, outs[k0 % 2], "S2MM (output)", k0)
        r.t_send[k0] = self.now()
        self._send(ins[k0 % 2], frames[k0], k0)
        for k in range(k0, n):
            await self._wait_dma(self.send, "MM2S (input)", k, aio)      # frame k is in the engine
            if k + 1 < n:                                                 # overlap: send k+1 while k computes
                r.t_send[k + 1] = self.now()
                self._send(ins[(k + 1) % 2], frames[k + 1], k + 1)
            else:
                self.wr("AP_CTRL", 0)                                     # last frame in: stop auto_restart
            await self._wait_dma(self.recv, "S2MM (output)", k, aio)
            r.t_done[k] = self.now()
            r.logits[k] = self._take(outs[k % 2], k)
            r.next = k + 1
            if k + 1 < n:
                self._transfer(self.recv, outs[(k + 1) % 2], "S2MM (output)", k + 1)

    # ---- recovery -----------------------------------------------------------
    async def _drain(self, rec: dict, aio: bool) -> None:
        idle = self.regmap.mask("ap_idle")
        ib, ob = self._scratch()
        for _ in range(DRAIN_ROUNDS):
            if self.rd("AP_CTRL") & idle:
                return
            self._transfer(self.recv, ob, "S2MM (recovery)", -1)
            if not await self._wait_dma(self.recv, "S2MM (recovery)", -1, aio, quiet_s=self.drain_wait_s):
                # nothing came: the engine waits for (the rest of) an input frame; a one-beat
                # packet with TLAST ends it, and the engine answers with an error frame
                ib[0] = 0
                self._transfer(self.send, ib, "MM2S (recovery)", -1)
                rec["flushes"] += 1
                await self._wait_dma(self.send, "MM2S (recovery)", -1, aio)
                await self._wait_dma(self.recv, "S2MM (recovery)", -1, aio)
            rec["drained"] += 1
        if not self.rd("AP_CTRL") & idle:
            raise AcceleratorError(f"recovery: the accelerator is not idle after {DRAIN_ROUNDS} drained frames "
                                   f"({self.describe()}); reload the bitstream ({self.source})")

    async def _recover(self, why, aio: bool = False) -> dict:
        rec = dict(reason=f"{type(why).__name__}: {why}" if isinstance(why, BaseException) else str(why),
                   t=self.now(), dmasr_mm2s=self._dmasr(self.send), dmasr_s2mm=self._dmasr(self.recv),
                   drained=0, flushes=0)
        with self._tm.part("recovery"):
            self.reset_dma()
            self.wr("AP_CTRL", 0)                       # stop auto_restart
            await self._drain(rec, aio)
            rec["bases_rewritten"] = self._ensure_bases()
        self._dirty = False
        self.recoveries.append(rec)
        return rec

    def recover(self, why: str = "requested") -> dict:
        """Soft-reset the DMA, restart its channels, drain the engine until ``ap_idle``.
        Returns what was done: the DMASRs found, output frames drained, one-beat frames sent."""
        return _run_sync(self._recover(why))

    # ---- running frames ---------------------------------------------------
    async def _run(self, mode: str, frames, aio: bool) -> RunStats:
        frames = self._frames(frames)
        self._tm.begin()
        n = len(frames)
        r = _Frames(n, self.classes)
        recs: list[dict] = []
        m0, s0 = self.mm2s_transfers, self.s2mm_transfers
        if self._dirty and self.recover_errors:
            await self._recover("the previous call on this accelerator did not finish", aio)
        lost = self._ensure_bases()                # the engine loses wts/act with a PL reset ...
        if lost and self.recover_errors:           # ... and the AXI DMA its state: restart it before sending
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
            self.wr("ISR", self.rd("ISR"))
            self.wr("IER", ISR_AP_DONE)
            self.wr("GIE", 1)
        proto = self._classify_from if mode == "classify" else self._stream_from
        fd_start = self.rd("frames_done")
        t0 = self.now()
        try:
            while True:
                fd0, k0 = self.rd("frames_done"), r.next
                self._dirty = True
                try:
                    await proto(frames, r, aio)
                    self._check_frames_done(fd0, n - k0)
                    self._dirty = False
                    break
                except (DmaError, AcceleratorTimeout) as e:
                    if not self.recover_errors:
                        raise
                    try:
                        rec = await self._recover(e, aio)
                    except HostError as failed:
                        raise _with_note(e, f"recovery failed: {failed}") from failed
                    rec["frame"] = r.next
                    recs.append(rec)
                    errors = sum(1 for x in recs if not x.get("pl_reset"))
                    if errors > self.retries:
                        raise _with_note(e, f"the driver recovered (DMA reset, engine drained) but {errors} "
                                            f"errors in this call exceed retries={self.retries}") from e
                except AcceleratorError as e:      # the engine answered wrongly: back to a known state, no retry
                    if self.recover_errors:
                        try:
                            await self._recover(e, aio)
                        except HostError as failed:
                            raise _with_note(e, f"recovery failed: {failed}") from failed
                        if isinstance(e, EngineStatusError) and set(e.flags) & set(MEMORY_FLAGS):
                            self.load_weights()
                            raise _with_note(e, "the driver drained the engine, copied the weight image into its "
                                                "buffer again, flushed it and rewrote wts/act: the next call runs "
                                                "on it") from e
                    raise
        finally:
            if irq:
                self._irq_on = False
                self.wr("GIE", 0)
        seconds = self.now() - t0
        regs = self.registers()
        fd = (regs["frames_done"] - fd_start) & 0xFFFFFFFF
        if mode == "classify":
            cycles, measured = r.cycles, r.measured
        else:
            cycles, measured = [regs["cycles_last"]], {k: [regs[k]] for k in r.measured}
        return RunStats(mode, r.logits, r.t_send, r.t_done, seconds, cycles, measured["dram_rd_bytes"],
                        measured["dram_wr_bytes"], measured["dram_stall_cycles"], self.engine, fd, regs,
                        host=self._tm.per_frame(n), recoveries=recs, mm2s_transfers=self.mm2s_transfers - m0,
                        s2mm_transfers=self.s2mm_transfers - s0, interrupts=irq)

    def classify(self, frames) -> RunStats:
        """One ``ap_start`` per frame (ap_ctrl_hs handshake), checking status after each (polled)."""
        return _run_sync(self._run("classify", frames, aio=False))

    def stream(self, frames) -> RunStats:
        """Frames back to back with ``auto_restart`` (polled). Results in input order."""
        return _run_sync(self._run("stream", frames, aio=False))

    async def classify_async(self, frames) -> RunStats:
        """:meth:`classify`, waiting on the interrupts (``ap_done``, DMA completion) where the
        design wires them: the CPU is free for other asyncio tasks meanwhile."""
        return await self._run("classify", frames, aio=True)

    async def stream_async(self, frames) -> RunStats:
        """:meth:`stream`, waiting on the DMA interrupts (``wait_async`` style) where wired."""
        return await self._run("stream", frames, aio=True)


def throughput(frames: int, seconds: float, host_s_per_frame: float, bytes_in: int, bytes_out: int,
               fclk_hz: float, cycles_last: int | None, simulated: bool, modelled_cycles: int | None = None) -> dict:
    """Frames/s and DMA bandwidth (MB/s, 10^6 bytes) of a stream, accelerator only and
    including the host's per-frame work.

    Simulated (``seconds`` is simulated time, which holds no host time): accelerator only =
    frames / simulated seconds; including host = an estimate, simulated seconds plus
    ``frames`` x the host time measured on this machine (not the board's CPU), no overlap.
    On the board (``seconds`` is wall time, host work included): including host = measured;
    accelerator only = ``fclk / cycles_last`` (the engine from a frame's first input beat to its
    last output beat, frames back to back, the DMA keeping up; measured by the RTL twin), or,
    on the HLS engine, which has no cycle counter, ``fclk / modelled_cycles`` (the manifest's
    cycle model: labelled modelled)."""
    n = int(frames)
    host = float(host_s_per_frame or 0.0)
    acc_fps = inc_fps = float("nan")
    if simulated:
        if seconds > 0:
            acc_fps = n / seconds
            inc_fps = n / (seconds + n * host)
        acc_src = "simulated time (RTL + DMA model, host time not included)"
        inc_src = ("estimate: simulated accelerator time + host time per frame measured on this machine "
                   "(not the board's CPU), no overlap")
    else:
        if seconds > 0:
            inc_fps = n / seconds
        if cycles_last:
            acc_fps = fclk_hz / cycles_last
            acc_src = f"fclk / cycles_last (the engine alone, frames back to back; {MEASURED})"
        else:
            if modelled_cycles:
                acc_fps = fclk_hz / modelled_cycles
            acc_src = f"fclk / cycles per frame of the cycle model (the engine alone; {MODELLED})"
        inc_src = "board wall time (host work included)"
    mb = 1e-6
    return dict(frames=n, bytes_in_per_frame=int(bytes_in), bytes_out_per_frame=int(bytes_out),
                fclk_mhz=fclk_hz / 1e6, cycles_last=cycles_last,
                fps_accelerator_only=acc_fps, input_MBps_accelerator_only=acc_fps * bytes_in * mb,
                output_MBps_accelerator_only=acc_fps * bytes_out * mb,
                fps_including_host=inc_fps, input_MBps_including_host=inc_fps * bytes_in * mb,
                output_MBps_including_host=inc_fps * bytes_out * mb,
                host_seconds_per_frame=host, accelerator_only_from=acc_src, including_host_from=inc_src)


def percentiles(lat_s, q=(50, 90, 99)) -> dict[str, float]:
    """Latency percentiles in milliseconds: {'p50': .., 'p90': .., 'p99': ..}."""
    a = np.asarray(lat_s, dtype=np.float64)
    if a.size == 0:
        return {f"p{p}": float("nan") for p in q}
    return {f"p{p}": float(np.percentile(a, p) * 1e3) for p in q}
