"""The DDR behind the engine's AXI4 masters, for cocotb testbenches. Follows UG585 (Zynq-7000 TRM: the
HP ports, the DDR controller) and AMBA AXI (ARM IHI 0022: the channel rules its checkers enforce): the memory presets of
:class:`zynqflow.spec.engine.MemoryModel`, protocol checkers, and a memory that keeps
answering reads across a DUT reset.

:class:`Ddr` is one memory (a cocotbext-axi :class:`SparseMemory`) and one cycle-level AXI4
slave per master port (:class:`DdrPort`: ``m_axi_wts``, ``m_axi_act``, ``m_axi_act2``; a port the
DUT lacks is absent in effect: no VALID ever rises on it), driven by one
coroutine that, every clock cycle,

1. takes effect of the handshakes of the cycle that just ended (sampled in its read-only
   phase): R and W beats taken from the buckets, AR/AW bursts queued and checked, W beats
   matched with their bursts and written, B responses taken; stream bytes charged;
2. refills the token buckets (end of cycle);
3. drives the slave's outputs for the new cycle: READY on AR/AW/W, a new R or B beat;
4. samples the master's outputs in the read-only phase.

It implements the docstring of ``MemoryModel`` literally (the C++ ``AxiMem`` of the harness
implements the same text): per port ``read_latency`` from the AR handshake to the first R
beat, B ``write_latency`` after a burst's last W beat, a token bucket per port and direction
(``port_bytes_per_cycle``), one shared bucket for every port, both directions and the charged
stream bytes (``shared_bytes_per_cycle``, ``cpu_share``), refresh, and the stress behaviours
(random gaps on AR/R/AW/W/B, long stalls, AWREADY held until a W beat arrives). The slave
accepts up to twice ``max_reads``/``max_writes`` bursts and reports a master that has more
than ``max_reads``/``max_writes`` outstanding.

Protocol checks (each message names the cycle, the port and the channel; the C++ harness
checks the same): a burst of more than 16 beats, one that crosses 4 KiB, AxSIZE other than
the 64-bit beat, AxBURST other than INCR, WLAST on the wrong beat, VALID withdrawn or the
payload changed while VALID waits for READY (AR, AW, W), more bursts outstanding than the
limit. Messages collect in :attr:`Ddr.errors`; with ``fatal=True`` the first one raises
(the cocotb test fails at that cycle).

Tests steer the memory beyond the preset: :meth:`DdrPort.hold` keeps a channel's READY low
(or a new R/B beat back) while a flag or predicate holds, :attr:`Ddr.hooks` are called every
cycle in the read-only phase (an adversary that watches the DUT), :meth:`DdrPort.fail_reads`
/ :meth:`fail_writes` answer SLVERR for an address range.
"""

from __future__ import annotations

import collections
import logging
import random
from dataclasses import dataclass, field, replace

import cocotb
from cocotb.triggers import First, ReadOnly, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.spec.engine import AXI_BURST_BEATS, MEMORY_MODEL, STREAM_BITS, MemoryModel, memory_preset

OKAY, SLVERR, DECERR = 0, 2, 3
PAGE = 4096
INCR = 1
W_FIFO_BEATS = 64          # W beats the slave takes ahead of their AW
QUIET_CYCLES = 8           # idle cycles before the memory sleeps until a VALID rises
CHANNELS = ("ar", "r", "aw", "w", "b")


class ProtocolError(AssertionError):
    """A master broke an AXI4 rule the memory checks (the message names cycle, port and channel)."""


def _sig(dut, name):
    """A DUT signal, or None when the port set lacks it (module testbenches)."""
    for n in (name, name.upper(), name.lower()):
        h = getattr(dut, n, None) if hasattr(dut, n) else None
        if h is not None:
            return h
    return None


def signal_reader(h, default: int = 0):
    """A function returning the signal's value as an unsigned int (cocotb's fast path: the
    simulator's integer, or its binary string beyond 32 bits); a constant for a missing signal."""
    if h is None:
        return lambda: default
    raw = h._handle
    try:
        width = len(h)
    except TypeError:
        width = 1
    if width <= 32:
        mask = (1 << width) - 1
        return lambda: raw.get_signal_val_long() & mask
    return lambda: int(raw.get_signal_val_binstr(), 2)


try:   # cocotb's write path below the `handle.value = v` setter (cocotb 2.x)
    from cocotb.handle import _GPISetAction, _schedule_write
except ImportError:   # another cocotb: the public setter
    _schedule_write = None


def signal_writer(h):
    """A function writing an unsigned int to the signal as ``h.value = v`` does (a deposit, applied
    with the other writes of this time step), without the setter's per-write type dispatch and
    range checks: the integer (32 bits or less) or binary-string call of the simulator, queued by
    cocotb's own scheduler. A no-op for a missing signal."""
    if h is None:
        return lambda v: None
    if _schedule_write is None:
        def write(v):
            h.value = v
        return write
    raw, deposit = h._handle, _GPISetAction.DEPOSIT
    try:
        width = len(h)
    except TypeError:
        width = 1
    if width <= 32:
        set_int = raw.set_signal_val_int
        return lambda v: _schedule_write(h, set_int, deposit, v)
    set_bin, fmt = raw.set_signal_val_binstr, f"0{width}b"
    return lambda v: _schedule_write(h, set_bin, deposit, format(v, fmt))


class _Bucket:
    """A token bucket: starts full, holds at most ``depth``, gains ``rate`` at the end of each cycle.
    ``free``: no limit (no rate, or a rate that refills a beat every cycle of a one-beat-a-cycle
    channel, so it never empties)."""

    __slots__ = ("rate", "depth", "level", "free")

    def __init__(self, rate: float, depth: float, beat: int = 0):
        self.rate, self.depth, self.level = float(rate), float(depth), float(depth)
        self.free = self.rate <= 0 or (beat > 0 and self.rate >= beat)

    def ok(self) -> bool:
        return self.free or self.level > 0

    def take(self, n: float) -> None:
        if not self.free:
            self.level -= n

    def refill(self) -> None:
        if not self.free and self.level < self.depth:
            self.level = min(self.depth, self.level + self.rate)


class _Burst:
    __slots__ = ("addr", "beats", "id", "ready_at", "beat", "resp")

    def __init__(self, addr: int, beats: int, id_: int = 0, ready_at: int = 0):
        self.addr, self.beats, self.id, self.ready_at, self.beat, self.resp = addr, beats, id_, ready_at, 0, OKAY


@dataclass
class PortStats:
    bursts: int = 0           # address handshakes
    beats: int = 0
    bytes: int = 0            # bytes of beats answered OKAY
    max_outstanding: int = 0
    fail: list = field(default_factory=list)   # (lo, hi, resp): [lo, hi) answers resp


class DdrPort:
    """The slave side of one AXI4 master port of the DUT (signals ``<prefix>_ARVALID`` ..., or
    ``<prefix>_arvalid`` ...; a port set without IDs, AxSIZE or AxBURST gets 0, the beat size and
    INCR). Every cycle :class:`Ddr` calls :meth:`sample` (the values of the cycle that ended),
    :meth:`commit` and :meth:`drive` (the next cycle)."""

    def __init__(self, ddr: "Ddr", dut, prefix: str, index: int):
        self.ddr, self.prefix, self.index = ddr, prefix, index
        m = ddr.model
        self.model = m
        s = lambda n: _sig(dut, f"{prefix}_{n}")   # noqa: E731
        self.arvalid, self.arready, self.araddr, self.arlen = s("ARVALID"), s("ARREADY"), s("ARADDR"), s("ARLEN")
        self.arsize, self.arburst, self.arid = s("ARSIZE"), s("ARBURST"), s("ARID")
        self.rvalid, self.rready, self.rdata, self.rlast = s("RVALID"), s("RREADY"), s("RDATA"), s("RLAST")
        self.rresp, self.rid = s("RRESP"), s("RID")
        self.awvalid, self.awready, self.awaddr, self.awlen = s("AWVALID"), s("AWREADY"), s("AWADDR"), s("AWLEN")
        self.awsize, self.awburst, self.awid = s("AWSIZE"), s("AWBURST"), s("AWID")
        self.wvalid, self.wready, self.wdata, self.wlast, self.wstrb = (s("WVALID"), s("WREADY"), s("WDATA"),
                                                                       s("WLAST"), s("WSTRB"))
        self.bvalid, self.bready, self.bresp, self.bid = s("BVALID"), s("BREADY"), s("BRESP"), s("BID")
        self.has_read = self.arvalid is not None
        self.has_write = self.awvalid is not None
        nb = self.beat_bytes = m.beat_bytes
        self.size_code = (nb - 1).bit_length()
        r = signal_reader
        self.r_arvalid, self.r_araddr, self.r_arlen = r(self.arvalid), r(self.araddr), r(self.arlen)
        self.r_arsize, self.r_arburst, self.r_arid = r(self.arsize, self.size_code), r(self.arburst, INCR), r(self.arid)
        self.r_rready = r(self.rready)
        self.r_awvalid, self.r_awaddr, self.r_awlen = r(self.awvalid), r(self.awaddr), r(self.awlen)
        self.r_awsize, self.r_awburst, self.r_awid = r(self.awsize, self.size_code), r(self.awburst, INCR), r(self.awid)
        self.r_wvalid, self.r_wdata, self.r_wlast = r(self.wvalid), r(self.wdata), r(self.wlast)
        self.r_wstrb = r(self.wstrb, (1 << nb) - 1)
        self.r_bready = r(self.bready)
        w = signal_writer
        self.w_arready, self.w_rvalid, self.w_rdata, self.w_rlast = (w(self.arready), w(self.rvalid), w(self.rdata),
                                                                     w(self.rlast))
        self.w_rresp, self.w_rid = w(self.rresp), w(self.rid)
        self.w_awready, self.w_wready, self.w_bvalid = w(self.awready), w(self.wready), w(self.bvalid)
        self.w_bresp, self.w_bid = w(self.bresp), w(self.bid)
        self.rd_bucket = _Bucket(m.port_bytes_per_cycle, m.shared_bucket_bytes, nb)
        self.wr_bucket = _Bucket(m.port_bytes_per_cycle, m.shared_bucket_bytes, nb)
        self.read = PortStats()
        self.write = PortStats()
        self.rng: dict[str, random.Random] = {}
        self.gap: dict[str, float] = {}
        self.set_stalls(0.0, m.seed)
        for ch in CHANNELS:
            self.gap[ch] = getattr(m, f"gap_{ch}")
        self.rng_stall = random.Random(self.rng["ar"].getrandbits(32) ^ 0x5A5A)
        self.holds: dict[str, list] = {ch: [] for ch in CHANNELS}
        self._steer = False                   # any gap or hold: the slow path of drive()
        self._update_steer()
        self.stall_left = 0
        self.r_resp = OKAY
        self.rq: collections.deque[_Burst] = collections.deque()   # AR handshake .. last R beat
        self.bq: collections.deque[_Burst] = collections.deque()   # last W beat .. B handshake
        self.r_shown = self.b_shown = False
        self._clear_writes()
        # the slave's outputs (written only when they change; None: not written yet)
        self.o_ar = self.o_rv = self.o_aw = self.o_w = self.o_bv = 0
        self.o_rlast = self.o_rresp = self.o_rid = self.o_bresp = self.o_bid = None
        for h in (self.arready, self.rvalid, self.awready, self.wready, self.bvalid):
            if h is not None:
                h.value = 0

    def _clear_writes(self) -> None:
        self.awq: collections.deque[_Burst] = collections.deque()  # AW handshake .. last W beat
        self.wq: collections.deque[tuple] = collections.deque()    # W beats not yet matched to an AW
        self.pend_ar = self.pend_aw = self.pend_w = None           # last cycle's payload waiting for READY
        self.s_arv = self.s_rr = self.s_awv = self.s_wv = self.s_br = 0
        self.s_ar = self.s_aw = self.s_w = None

    @property
    def reads_outstanding(self) -> int:
        return len(self.rq)

    @property
    def writes_outstanding(self) -> int:
        return len(self.awq) + len(self.bq)

    # ---- test controls ------------------------------------------------------------------
    def hold(self, channel: str, until=None):
        """Stall ``channel`` (AR/AW/W: READY low; R/B: no new beat): while ``until(cycle)`` is true
        (a callable of the memory cycle), until memory cycle ``until`` (an int), or until
        :meth:`release` (None). Returns the hold (to pass to release)."""
        if channel not in CHANNELS:
            raise ValueError(f"channel {channel!r}: one of {CHANNELS}")
        h = (until if callable(until) else (lambda c: True) if until is None else (lambda c, t=until: c < t),
             isinstance(until, int))
        self.holds[channel].append(h)
        self._update_steer()
        return h

    def release(self, channel: str, h=None) -> None:
        if h is None:
            self.holds[channel].clear()
        elif h in self.holds[channel]:
            self.holds[channel].remove(h)
        self._update_steer()

    def fail_reads(self, lo: int, hi: int, resp: int = SLVERR) -> None:
        """Reads of beats overlapping [lo, hi) answer ``resp`` (SLVERR; DECERR possible)."""
        self.read.fail.append((lo, hi, resp))

    def fail_writes(self, lo: int, hi: int, resp: int = SLVERR) -> None:
        self.write.fail.append((lo, hi, resp))

    def clear_faults(self) -> None:
        self.read.fail.clear()
        self.write.fail.clear()

    def set_stalls(self, p: float, seed: int) -> None:
        """Random gaps with probability p per cycle on every channel (AR/R/AW/W/B)."""
        for i, ch in enumerate(CHANNELS):
            self.gap[ch] = p
            self.rng[ch] = random.Random(seed * 31 + i + 1000 * self.index)
        self._update_steer()

    def set_gap(self, channel: str, p: float) -> None:
        self.gap[channel] = p
        self._update_steer()

    def _update_steer(self) -> None:
        self._steer = any(self.gap.get(ch, 0) > 0 or self.holds.get(ch) for ch in CHANNELS) if \
            hasattr(self, "holds") else False

    # ---- helpers ----------------------------------------------------------------------------
    def _held(self, ch: str, cycle: int) -> bool:
        hs = self.holds[ch]
        held = False
        for h in hs:
            if h[0](cycle):
                held = True
            elif h[1]:                                  # a deadline that has passed: gone
                hs.remove(h)
                self._update_steer()
                break
        p = self.gap[ch]
        if p > 0 and self.rng[ch].random() < p:     # (drawn every cycle: the gap sequence is the seed's)
            held = True
        return held

    def _error(self, ch: str, msg: str) -> None:
        self.ddr._error(f"{self.prefix} {ch.upper()}: {msg}")

    def _resp(self, addr: int, fail: list) -> int:
        nb = self.beat_bytes
        if addr + nb > self.ddr.mem.size:
            return DECERR
        for lo, hi, resp in fail:
            if lo < addr + nb and addr < hi:
                return resp
        return OKAY

    def _check_burst(self, ch: str, addr: int, beats: int, size: int, burst: int) -> None:
        if beats > AXI_BURST_BEATS:
            self._error(ch, f"burst at 0x{addr:08x}: {beats} beats, more than {AXI_BURST_BEATS}")
        last = (addr & ~(self.beat_bytes - 1)) + self.beat_bytes * beats - 1
        if addr // PAGE != last // PAGE:
            self._error(ch, f"burst at 0x{addr:08x}, {beats} beats, crosses a 4 KiB boundary")
        if size != self.size_code:
            self._error(ch, f"burst at 0x{addr:08x}: {ch.upper()}SIZE {size} (a {8 * self.beat_bytes}-bit port: "
                            f"{self.size_code})")
        if burst != INCR:
            self._error(ch, f"burst at 0x{addr:08x}: {ch.upper()}BURST {burst} (INCR = 1 only)")

    def _unstable(self, ch: str, prev, payload) -> None:
        if payload is None:
            self._error(ch, f"{ch.upper()}VALID withdrawn before {ch.upper()}READY")
        else:
            self._error(ch, f"payload changed while {ch.upper()}VALID waited for {ch.upper()}READY "
                            f"({_fmt(prev)} -> {_fmt(payload)})")

    # ---- sample: the master's outputs of the cycle that just ended ---------------------------------
    def sample(self, in_reset: bool) -> None:
        if in_reset:                               # a master in reset may drop VALID
            self.pend_ar = self.pend_aw = self.pend_w = None
        if self.has_read:
            av = self.s_arv = self.r_arvalid()
            if av or self.pend_ar is not None:
                p = (self.r_araddr(), self.r_arlen(), self.r_arsize(), self.r_arburst(), self.r_arid()) if av else None
                if self.pend_ar is not None and p != self.pend_ar:
                    self._unstable("ar", self.pend_ar, p)
                self.s_ar = p
                self.pend_ar = p if (av and not self.o_ar) else None
            self.s_rr = self.r_rready() if self.o_rv else 0
        if self.has_write:
            av = self.s_awv = self.r_awvalid()
            if av or self.pend_aw is not None:
                p = (self.r_awaddr(), self.r_awlen(), self.r_awsize(), self.r_awburst(), self.r_awid()) if av else None
                if self.pend_aw is not None and p != self.pend_aw:
                    self._unstable("aw", self.pend_aw, p)
                self.s_aw = p
                self.pend_aw = p if (av and not self.o_aw) else None
            wv = self.s_wv = self.r_wvalid()
            if wv or self.pend_w is not None:
                p = (self.r_wdata(), self.r_wstrb(), self.r_wlast()) if wv else None
                if self.pend_w is not None and p != self.pend_w:
                    self._unstable("w", self.pend_w, p)
                self.s_w = p
                self.pend_w = p if (wv and not self.o_w) else None
            self.s_br = self.r_bready() if self.o_bv else 0

    # ---- commit: the handshakes of the cycle that just ended ------------------------------------
    def commit(self, now: int) -> None:
        """``now``: the memory cycle that just ended."""
        d, m, nb = self.ddr, self.model, self.beat_bytes
        if self.o_rv and self.s_rr:                    # an R beat moved
            b = self.rq[0]
            self.rd_bucket.take(nb)
            d.shared.take(nb)
            self.read.beats += 1
            if self.r_resp == OKAY:
                self.read.bytes += nb
            self.r_shown = False
            b.beat += 1
            if b.beat == b.beats:
                self.rq.popleft()
        if self.o_ar and self.s_arv:                   # an AR handshake
            addr, ln, size, burst, rid = self.s_ar
            self._check_burst("ar", addr, ln + 1, size, burst)
            self.rq.append(_Burst(addr, ln + 1, rid, now + m.read_latency))
            self.read.bursts += 1
            n = len(self.rq)
            if n > m.max_reads:
                self._error("ar", f"{n} read bursts outstanding, more than {m.max_reads}")
            if n > self.read.max_outstanding:
                self.read.max_outstanding = n
        if not self.has_write:
            return
        if self.o_bv and self.s_br:
            self.bq.popleft()
            self.b_shown = False
        if self.o_aw and self.s_awv:
            addr, ln, size, burst, wid = self.s_aw
            self._check_burst("aw", addr, ln + 1, size, burst)
            self.awq.append(_Burst(addr, ln + 1, wid))
            self.write.bursts += 1
            n = self.writes_outstanding
            if n > m.max_writes:
                self._error("aw", f"{n} write bursts outstanding, more than {m.max_writes}")
            if n > self.write.max_outstanding:
                self.write.max_outstanding = n
        if self.o_w and self.s_wv:
            self.wr_bucket.take(nb)
            d.shared.take(nb)
            self.wq.append(self.s_w)
            self.write.beats += 1
        while self.awq and self.wq:                    # W beats meet their bursts, in order
            b = self.awq[0]
            data, strb, last = self.wq.popleft()
            a = (b.addr & ~(nb - 1)) + nb * b.beat
            resp = self._resp(a, self.write.fail)
            if resp == OKAY:
                self._store(a, data, strb)
            else:
                b.resp = max(b.resp, resp)
            b.beat += 1
            if bool(last) != (b.beat == b.beats):
                self._error("w", f"burst at 0x{b.addr:08x}: WLAST {'set' if last else 'missing'} on beat "
                                 f"{b.beat} of {b.beats}")
            if b.beat == b.beats:
                b.ready_at = now + m.write_latency
                self.bq.append(b)
                self.awq.popleft()

    def _store(self, a: int, data: int, strb: int) -> None:
        nb = self.beat_bytes
        raw = data.to_bytes(nb, "little")
        if strb == (1 << nb) - 1:
            self.ddr.mem.write(a, raw)
            self.write.bytes += nb
        else:
            for j in range(nb):
                if strb >> j & 1:
                    self.ddr.mem.write(a + j, raw[j:j + 1])
                    self.write.bytes += 1

    def end_cycle(self) -> None:
        if not self.rd_bucket.free:
            self.rd_bucket.refill()
        if not self.wr_bucket.free:
            self.wr_bucket.refill()

    # ---- drive: the slave's outputs of the next cycle ---------------------------------------------
    def drive(self, cycle: int, refresh: bool) -> None:
        d, m = self.ddr, self.model
        stalled = False
        if m.stall_prob > 0:
            if self.stall_left > 0:
                self.stall_left -= 1
                stalled = True
            elif self.rng_stall.random() < m.stall_prob:
                self.stall_left = self.rng_stall.randint(1, max(1, m.stall_max)) - 1
                stalled = True
        steer = self._steer
        shared_ok = d.shared.free or d.shared.level > 0
        if self.has_read:
            v = int(not stalled and len(self.rq) < 2 * m.max_reads and not (steer and self._held("ar", cycle)))
            if v != self.o_ar:
                self.w_arready(v)
                self.o_ar = v
            if not self.r_shown and self.rq:
                b = self.rq[0]
                if (b.ready_at <= cycle and not refresh and not stalled and shared_ok and self.rd_bucket.ok()
                        and not (steer and self._held("r", cycle))):
                    nb = self.beat_bytes
                    a = (b.addr & ~(nb - 1)) + nb * b.beat
                    resp = self._resp(a, self.read.fail)
                    self.r_resp = resp
                    self.w_rdata(int.from_bytes(d.mem.read(a, nb), "little") if resp == OKAY else 0)
                    v = int(b.beat == b.beats - 1)
                    if v != self.o_rlast:
                        self.w_rlast(v)
                        self.o_rlast = v
                    if resp != self.o_rresp:
                        self.w_rresp(resp)
                        self.o_rresp = resp
                    if b.id != self.o_rid:
                        self.w_rid(b.id)
                        self.o_rid = b.id
                    self.r_shown = True
            elif steer and not self.r_shown:
                self._held("r", cycle)                  # (the gap sequence advances every cycle)
            v = int(self.r_shown)
            if v != self.o_rv:
                self.w_rvalid(v)
                self.o_rv = v
        if not self.has_write:
            return
        v = int(not stalled and self.writes_outstanding < 2 * m.max_writes and not (m.aw_waits_for_w and not self.wq)
                and not (steer and self._held("aw", cycle)))
        if v != self.o_aw:
            self.w_awready(v)
            self.o_aw = v
        v = int(not stalled and not refresh and shared_ok and self.wr_bucket.ok() and len(self.wq) < W_FIFO_BEATS
                and not (steer and self._held("w", cycle)))
        if v != self.o_w:
            self.w_wready(v)
            self.o_w = v
        if not self.b_shown and self.bq:
            b = self.bq[0]
            if b.ready_at <= cycle and not stalled and not (steer and self._held("b", cycle)):
                if b.resp != self.o_bresp:
                    self.w_bresp(b.resp)
                    self.o_bresp = b.resp
                if b.id != self.o_bid:
                    self.w_bid(b.id)
                    self.o_bid = b.id
                self.b_shown = True
        elif steer and not self.b_shown:
            self._held("b", cycle)
        v = int(self.b_shown)
        if v != self.o_bv:
            self.w_bvalid(v)
            self.o_bv = v

    def quiet(self) -> bool:
        """Nothing in flight, nothing offered, no stall: the next cycles are all alike until a VALID rises."""
        return not (self.rq or self.bq or self.awq or self.wq or self.r_shown or self.b_shown or self.s_arv or
                    self.s_awv or self.s_wv or self.stall_left or self._steer or self.pend_ar is not None or
                    self.pend_aw is not None or self.pend_w is not None)

    def valids(self) -> list:
        return [h for h in (self.arvalid, self.awvalid, self.wvalid) if h is not None]

    def refill(self, n: int) -> None:
        for b in (self.rd_bucket, self.wr_bucket):
            if not b.free:
                b.level = min(b.depth, b.level + n * b.rate)

    def dut_reset(self, keep_reads: bool) -> None:
        """The DUT was in reset in the cycle that just ended. keep_reads: the reads in flight go
        on, complete write bursts keep their B, the rest is dropped; else everything is dropped."""
        self._clear_writes()
        if not keep_reads:
            self.rq.clear()
            self.bq.clear()
            self.r_shown = self.b_shown = False


def _fmt(p) -> str:
    return "(" + ", ".join(f"0x{v:x}" for v in p) + ")" if p else str(p)


class Ddr:
    """The DDR every master of the DUT sees: one sparse memory, one :class:`DdrPort` per prefix,
    one shared token bucket. ``model``: a :class:`MemoryModel` or a preset name (``"ideal"``,
    ``"pynq-z2"``, ``"stress"``); ``overrides``: fields changed from it (``seed=3``, ...)."""

    def __init__(self, dut, clock, reset, period_steps: int | None = None, model: MemoryModel | str = MEMORY_MODEL,
                 size: int = 1 << 32, prefixes=("m_axi_wts", "m_axi_act", "m_axi_act2"), reset_active_level: bool = False,
                 fatal: bool = False, mem: SparseMemory | None = None, **overrides):
        self.model = memory_preset(model, **overrides) if isinstance(model, str) else replace(model, **overrides)
        m = self.model
        self.dut, self.clock, self.reset = dut, clock, reset
        self.period = int(period_steps or 0)      # clock period in simulator steps (0: never sleep)
        self.reset_active = int(reset_active_level)
        self.mem = mem if mem is not None else SparseMemory(size)
        self.fatal = fatal
        self.errors: list[str] = []
        self.n_errors = 0
        self.cycle = 0                    # the memory's own cycles since it was created
        self.shared = _Bucket((1.0 - m.cpu_share) * m.shared_bytes_per_cycle, m.shared_bucket_bytes)
        if m.shared_bytes_per_cycle > 0 and self.shared.rate <= 0:
            raise ValueError(f"memory model: cpu_share {m.cpu_share} leaves the masters no bandwidth")
        self.streams: list[tuple] = []    # (valid, ready, bytes per beat)
        self.stream_bytes = 0
        self.pending_charge = 0           # bytes charged and not yet taken from the shared budget
        self.dma_bytes_per_cycle = STREAM_BITS // 8
        self.hooks: list = []             # called every cycle with the memory cycle that ended (signals hold its values)
        self.refresh_cycles_seen = 0
        self.ports = [DdrPort(self, dut, p, i) for i, p in enumerate(prefixes)]
        for p in self.ports:
            setattr(self, p.prefix.replace("m_axi_", ""), p)
        logging.getLogger(f"cocotb.{dut._name}").setLevel(logging.WARNING)
        self._task = cocotb.start_soon(self._run())

    def set(self, **overrides) -> None:
        """Change MemoryModel fields from the next cycle on (latencies, limits, gaps, aw_waits_for_w...;
        the buckets keep their rates)."""
        self.model = replace(self.model, **overrides)
        for p in self.ports:
            p.model = self.model
            for ch in CHANNELS:
                if f"gap_{ch}" in overrides:
                    p.set_gap(ch, overrides[f"gap_{ch}"])

    # ---- memory ------------------------------------------------------------------------------
    def load(self, address: int, data: bytes) -> None:
        self.mem.write(address, data)

    def read(self, address: int, length: int) -> bytes:
        return self.mem.read(address, length)

    # ---- shared budget -------------------------------------------------------------------------
    def charge(self, nbytes: int) -> None:
        """Bytes another master moves through the DDR (the DMA: a packet, or the streams standing for
        it: a beat), charged to the shared budget at most ``dma_bytes_per_cycle`` a cycle from now on
        (the DMA moves a packet at its stream's rate)."""
        if not self.shared.free:
            self.pending_charge += nbytes
        self.stream_bytes += nbytes

    def charge_stream(self, valid, ready, beat_bytes: int) -> None:
        """Charge every handshake of a stream (e.g. ``s_axis_in``) to the shared budget, in its cycle."""
        self.streams.append((valid, ready, beat_bytes))

    def stream_gate(self):
        """A cocotbext-axi pause generator: pause (True) while the shared budget is not positive
        (a DMA's stream stops when its DDR side gets no bandwidth)."""
        while True:
            yield not self.shared.ok()

    def refresh(self, cycle: int) -> bool:
        m = self.model
        return m.refresh_interval > 0 and cycle % m.refresh_interval < m.refresh_cycles

    # ---- checks ----------------------------------------------------------------------------------
    def _error(self, msg: str) -> None:
        self.n_errors += 1
        text = f"cycle {self.cycle}: {msg}"
        if len(self.errors) < 64:
            self.errors.append(text)
        if self.fatal:
            raise ProtocolError(text)

    def check(self) -> None:
        """Raise :class:`ProtocolError` with the first messages if any check failed."""
        if self.n_errors:
            raise ProtocolError(f"{self.n_errors} AXI protocol error(s): " + "; ".join(self.errors[:4]))

    def stats(self) -> dict:
        return {p.prefix: dict(read_bursts=p.read.bursts, read_bytes=p.read.bytes, write_bursts=p.write.bursts,
                               write_bytes=p.write.bytes, max_reads=p.read.max_outstanding,
                               max_writes=p.write.max_outstanding) for p in self.ports} | \
            dict(stream_bytes=self.stream_bytes, cycles=self.cycle, protocol_errors=self.n_errors)

    # ---- the clock ---------------------------------------------------------------------------------
    async def _run(self):
        # Right after a rising edge the signals still hold the values of the cycle that ended
        # (the edge's flops update after this callback): sample, take effect, then drive.
        edge = RisingEdge(self.clock)
        ports, shared, streams = self.ports, self.shared, self.streams
        keep = self.model.keep_reads_on_reset
        r_reset = signal_reader(self.reset, 1 - self.reset_active)
        streams_rd: list = []
        valids = [h for p in ports for h in p.valids()]
        r_valids = [signal_reader(h) for h in valids]
        quiet = 0
        for p in ports:
            p.drive(self.cycle, self.refresh(self.cycle))
        while True:
            await edge
            now = self.cycle
            rst = r_reset() == self.reset_active
            for p in ports:
                p.sample(rst)
                p.commit(now)
            if streams:
                if len(streams_rd) != len(streams):
                    streams_rd = [(signal_reader(v), signal_reader(r), n) for v, r, n in streams]
                for rv, rr, n in streams_rd:
                    if rv() and rr():
                        self.charge(n)
            if rst:
                for p in ports:
                    p.dut_reset(keep)
            # the end of cycle `now`
            if self.pending_charge:
                n = min(self.pending_charge, self.dma_bytes_per_cycle)
                shared.take(n)
                self.pending_charge -= n
            if not shared.free:
                shared.refill()
            for p in ports:
                p.end_cycle()
            self.cycle = now + 1
            for h in self.hooks:
                h(now)
            refresh = self.refresh(self.cycle)
            if refresh:
                self.refresh_cycles_seen += 1
            for p in ports:
                p.drive(self.cycle, refresh)
            # a memory with nothing to do sleeps until a master's VALID rises (the cycles in between
            # are all alike: READY as driven, buckets refilling); not with streams charged, hooks,
            # random behaviour or holds, which act every cycle
            if self.period and not streams and not self.hooks and not self.model.stall_prob and \
                    not self.pending_charge and all(p.quiet() for p in ports):
                quiet += 1
            else:
                quiet = 0
            if quiet >= QUIET_CYCLES:
                quiet = 0
                await ReadOnly()                       # the values of cycle self.cycle, settled
                if any(r() for r in r_valids):
                    continue
                k, t_k = self.cycle, get_sim_time("step")
                await First(*[h.value_change for h in valids])
                j = k + (get_sim_time("step") - t_k) // self.period
                if j > k:
                    if not shared.free:
                        shared.level = min(shared.depth, shared.level + (j - k) * shared.rate)
                    for p in ports:
                        p.refill(j - k)
                    self.cycle = j
                    for p in ports:
                        p.drive(j, self.refresh(j))
