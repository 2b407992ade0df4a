"""zq_wdma: the weight DMA (header check, image words into the weight ring, weight cache).

The image is built with ``zynqflow.spec.engine``'s HEADER fields (HEADER_MAGIC, SPEC_VERSION,
the build's NET_ID, word size, word count, ``header_bytes``) and random words, behind the
project's DDR read-port model (``sim/world/ddr.py``) with random AR/R stalls. A model of the
MAC loop releases ring words some time after they arrive (``release_words`` starts over every
frame, as in zq_top). Errors are handled as zq_top does: ``abort`` until ``busy`` falls.
Checked:

* AR: 16-beat bursts at base, base+128, ... (never across 4 KiB) covering exactly the image (the
  last one shorter when 64-byte words come in an odd number), the words' bursts only after
  ``hdr_ok``, a burst only once every word it touches is < release + 2^WR_W (CACHE=0);
* the ring writes: word i at address i mod 2^WR_W with the image's bytes, in order,
  ``loaded`` = i+1 with it; ``loaded`` = N_WORDS and ``busy`` low at the end; ``bytes_read``;
* each header field wrong in turn -> ``hdr_bad``, no word read or written; SLVERR in the
  header -> ``err`` without ``hdr_bad``; SLVERR in the words -> ``err``;
* CACHE=1: after a full frame, the next frames read the header only, ``loaded`` = N_WORDS in
  the cycle after ``start``, no ring write; a bad header or a read error drops the cache
  (the next good frame reads the whole image again);
* ``abort`` stops new requests, the bursts in flight drain, ``busy`` falls.
"""

from __future__ import annotations

import collections

import cocotb
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.sim.rtl.tb.common import AxiMasterChecker, TBBase, memory, u
from zynqflow.spec import engine as E

BASE = 0x1000_0000


class TB(TBBase):
    def __init__(self, dut, test, stalls: float = 0.2):
        super().__init__(dut, test=test)
        self.wb = self.param("WORD_BYTES")
        self.wr_w = self.param("WR_W")
        self.n_words = self.param("N_WORDS")
        self.hdr_bytes = self.param("HDR_BYTES")
        self.net_id = self.param("NET_ID")
        self.cache = self.param("CACHE")
        self.max_out = self.param("MAX_OUT", 8)
        self.ring = 1 << self.wr_w
        self.mem = SparseMemory(1 << 32)
        self.ram = memory(self, gaps=dict(ar=stalls, r=stalls), read_latency=12, max_reads=16)
        self.axi = AxiMasterChecker(self, "m", 8, read=True, max_rd=self.max_out)
        self.words = [self.rng.getrandbits(8 * self.wb) for _ in range(self.n_words)]
        self.fields = dict(magic=E.HEADER_MAGIC, spec_version=E.SPEC_VERSION, net_id=self.net_id,
                           word_bytes=self.wb, n_words=self.n_words, header_bytes=self.hdr_bytes)
        self.write_image()
        # per frame
        self.release = 0
        self.writes: list[tuple[int, int, int, int]] = []     # (cycle, addr, data, loaded)
        self.ar_rise: list[tuple[int, int, int]] = []          # (cycle, release, hdr_ok) one cycle before
        self.frame_ar0 = 0
        self.hist = collections.deque([(0, 0)] * 2, maxlen=2)
        self.p_release = 0.5
        self.hold_until_full = False
        for n in ("start", "abort", "base", "release_words"):
            getattr(dut, n).value = 0

    def header(self, **override) -> bytes:
        f = dict(self.fields, **override)
        raw = b"".join(int(f[x.name]).to_bytes(4, "little") for x in E.HEADER)
        return raw + bytes(self.hdr_bytes - len(raw))

    def write_image(self, **override):
        body = b"".join(w.to_bytes(self.wb, "little") for w in self.words)
        self.mem.write(BASE, self.header(**override) + body)

    async def consumer(self):
        d = self.dut
        while True:
            await self.cycle()
            loaded = u(d.loaded)
            if self.hold_until_full and loaded < min(self.n_words, self.release + self.ring):
                pass                             # a consumer that lets the ring fill up first
            elif self.rng.random() < self.p_release:
                if self.release < min(loaded, self.n_words):
                    self.release += self.rng.randrange(1, 4)
                    self.release = min(self.release, loaded, self.n_words)
            d.release_words.value = self.release

    async def monitor(self):
        d = self.dut
        arv_prev = 0
        while True:
            await self.step()
            c = self.cycles
            nr = len(self.axi.r)
            self.check(8 * (nr - 1) <= u(d.bytes_read) <= 8 * nr,
                       lambda: f"bytes_read at cycle {c}: {u(d.bytes_read)} with {nr} R beats")
            if u(d.w_wr_en):
                self.writes.append((c, u(d.w_wr_addr), u(d.w_wr_data), u(d.loaded)))
            arv = u(d.m_arvalid)
            if arv and not arv_prev:
                rel, ok = self.hist[-1]
                self.ar_rise.append((c, rel, ok))
            arv_prev = arv
            self.axi.sample(c)
            self.hist.append((u(d.release_words), u(d.hdr_ok)))

    async def frame(self, kind: str, timeout: int = 20000):
        """kind: 'full' (reads everything), 'cached' (header only), 'bad' (header rejected),
        'rd_err' (a read error somewhere). Checks the frame; handles errors as zq_top does."""
        d = self.dut
        await self.cycle()
        self.release = 0
        d.release_words.value = 0
        d.start.value, d.base.value = 1, BASE
        self.writes = []
        self.ar_rise = []
        self.frame_ar0 = len(self.axi.ar)
        self.bytes0 = 8 * len(self.axi.r)
        await self.cycle()
        d.start.value = 0
        await self.settle()
        if kind == "cached":
            self.eq(u(d.loaded), self.n_words, "loaded in the cycle after start (cached image)")
        errored = False
        for _ in range(timeout):
            await self.step()
            if u(d.hdr_bad) or u(d.err):
                errored = True
                break
            if not u(d.busy):
                break
        if errored:
            self.check(kind in ("bad", "rd_err"), lambda: f"unexpected error in a '{kind}' frame "
                                                          f"(hdr_bad={u(d.hdr_bad)}, err={u(d.err)})")
            if kind == "bad":
                self.eq((u(d.hdr_bad), u(d.err), u(d.hdr_ok)), (1, 0, 0), "hdr_bad / err / hdr_ok for a wrong header")
            else:
                self.eq((u(d.err), u(d.hdr_bad)), (1, 0), "err / hdr_bad for a read error")
            await self.cycle()
            d.abort.value = 1
            for _ in range(timeout):
                await self.step()
                if not u(d.busy):
                    break
            self.eq(u(d.busy), 0, "busy falls after abort")
            await self.cycle()
            d.abort.value = 0
        else:
            self.check(kind in ("full", "cached"), f"no error in a '{kind}' frame")
            self.eq(u(d.busy), 0, f"busy falls at the end of a '{kind}' frame")
            self.eq((u(d.hdr_ok), u(d.hdr_bad), u(d.err)), (1, 0, 0), "hdr_ok / hdr_bad / err at the end")
            self.eq(u(d.loaded), self.n_words, "loaded at the end of the frame")
        ars = [(a, n) for _, a, n in self.axi.ar[self.frame_ar0:]]
        hdr_bursts = self.hdr_bytes // 128
        if kind == "full":
            beats = (self.hdr_bytes + self.n_words * self.wb) // 8        # exactly the image
            self.eq(ars, [(BASE + 128 * k, min(16, beats - 16 * k)) for k in range(-(-beats // 16))],
                    "AR bursts of the image (16 beats, the last one ending with the image)")
            self.eq(u(self.dut.bytes_read) - self.bytes0, 8 * beats, "bytes_read of the frame")
            self.eq([(a, dt) for _, a, dt, _ in self.writes],
                    [(i % self.ring, w) for i, w in enumerate(self.words)], "ring writes (address, word)")
            self.eq([ld for *_, ld in self.writes], list(range(1, self.n_words + 1)), "loaded with each ring write")
            for (cyc, rel, ok), k in zip(self.ar_rise, range(len(self.ar_rise))):
                beat = 16 * k
                if beat >= self.hdr_bytes // 8:
                    self.eq(ok, 1, f"hdr_ok before the request of burst {k}")
                    if not self.cache:
                        last_word = -(-(beat + 16 - self.hdr_bytes // 8) // (self.wb // 8)) - 1
                        self.check(last_word < rel + self.ring,
                                   f"burst {k} (words up to {last_word}) requested with release={rel}")
        elif kind == "cached":
            self.eq(ars, [(BASE + 128 * k, 16) for k in range(hdr_bursts)], "AR bursts of a cached frame (header)")
            self.eq(self.writes, [], "ring writes in a cached frame")
        elif kind == "bad":
            self.check(all(a < BASE + self.hdr_bytes for a, _ in ars), "words read after a wrong header")
            self.eq(self.writes, [], "ring writes after a wrong header")

    def start(self):
        cocotb.start_soon(self.consumer())
        cocotb.start_soon(self.monitor())


@cocotb.test()
async def frames(dut):
    tb = TB(dut, "frames")
    tb.eq(tb.hdr_bytes, E.header_bytes(tb.wb), "HDR_BYTES parameter = spec.engine.header_bytes(WORD_BYTES)")
    await tb.reset()
    tb.start()
    await tb.frame("full")
    await tb.frame("cached" if tb.cache else "full")
    await tb.frame("cached" if tb.cache else "full")
    tb.info(cycles=tb.cycles, rd_out_max=tb.axi.rd_out_max)
    tb.done(200)


@cocotb.test()
async def ring_waits(dut):
    """A slow consumer: the DMA runs into the ring's end and waits for releases (CACHE=0)."""
    tb = TB(dut, "ring_waits")
    tb.p_release = 0.2
    tb.hold_until_full = True
    await tb.reset()
    tb.start()
    await tb.frame("full", timeout=60000)
    slack = [rel + tb.ring - (-(-(16 * k + 16 - tb.hdr_bytes // 8) // (tb.wb // 8)) - 1)
             for k, (_, rel, _) in enumerate(tb.ar_rise) if 16 * k >= tb.hdr_bytes // 8]
    if not tb.cache and tb.n_words > tb.ring:
        tb.check(min(slack) <= 2, f"the ring never ran full (least slack {min(slack)})")
    tb.done(100)


@cocotb.test()
async def header_checks(dut):
    tb = TB(dut, "header_checks")
    await tb.reset()
    tb.start()
    await tb.frame("full")
    for f in E.HEADER:
        tb.write_image(**{f.name: tb.fields[f.name] ^ (1 << tb.rng.randrange(8))})
        await tb.frame("bad")
        tb.write_image()
        await tb.frame("full")          # a rejected header drops the cache: the image is read again
        if tb.cache:
            await tb.frame("cached")
    tb.done(100)


@cocotb.test()
async def read_errors(dut):
    tb = TB(dut, "read_errors")
    await tb.reset()
    tb.start()
    words_lo = BASE + tb.hdr_bytes + tb.wb * (tb.n_words // 2)
    tb.ram.fail_reads(words_lo, words_lo + 8)
    await tb.frame("rd_err")            # first frame after reset: the whole image is read
    tb.ram.clear_faults()
    await tb.frame("full")              # a failed frame does not fill the cache
    tb.ram.fail_reads(BASE + 8, BASE + 16)
    await tb.frame("rd_err")            # header read error (also on a cached image)
    tb.ram.clear_faults()
    await tb.frame("full")              # ... drops the cache
    if tb.cache:
        await tb.frame("cached")
    tb.done(50)


@cocotb.test()
async def abort_mid_image(dut):
    tb = TB(dut, "abort_mid_image")
    await tb.reset()
    tb.start()
    d = dut
    await tb.cycle()
    d.start.value, d.base.value = 1, BASE
    await tb.cycle()
    d.start.value = 0
    for _ in range(60):
        await tb.cycle()
    d.abort.value = 1
    await tb.settle()
    pending = u(d.m_arvalid)
    n_ar = len(tb.axi.ar)
    for _ in range(2000):
        await tb.step()
        if not u(d.busy):
            break
    tb.eq(u(d.busy), 0, "busy falls after abort")
    tb.check(len(tb.axi.ar) - n_ar <= pending, "a request after abort")
    tb.eq(tb.axi.rd_out, 0, "bursts in flight drained")
    await tb.cycle()
    d.abort.value = 0
    await tb.frame("full")
    tb.done(20)
