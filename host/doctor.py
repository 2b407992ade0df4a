"""``zynqflow doctor``: a first bring-up, bottom up, one line per step: passed, or failed with
the fix. It stops at the first failure (what is above it cannot be judged yet).

====  =====================  ==============================================================
 1    bitstream and .hwh     both files, side by side, the .hwh names the engine; its timing
                             record (if any) is this network's
 2    IPs                    ``ip_dict`` has one engine (``zq_top``) and one AXI DMA
 3    register offsets       the ``.hwh``'s registers against the engine specification
 4    DMA status             neither channel halted with an error (DMASR)
 5    clock                  FCLK0 within what the design met (timing record, or its own clock)
 6    network ID             the engine's ``net_id`` / build against the manifest (opens the driver)
 7    weight image in DDR    the buffer holds ``weights.bin`` byte for byte; ``wts`` points at it
 8    one frame              the first test vector through the accelerator == the golden logits
====  =====================  ==============================================================

On the board the objects are pynq's; ``zynqflow doctor --backend rtl`` runs the same checks
against the RTL simulation (:mod:`zynqflow.sim.rtl.tb_host`, the PYNQ shim).
"""

from __future__ import annotations

import json
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .errors import HostError
from .manifest import Export


@dataclass
class Check:
    step: int
    name: str
    ok: bool | None            # None: not run (a step below failed)
    detail: str = ""
    fix: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self, n: int) -> str:
        state = {True: "passed", False: "FAILED", None: "not run"}[self.ok]
        out = f"[{self.step}/{n}] {self.name:22s} {state}" + (f": {self.detail}" if self.detail else "")
        if self.ok is False and self.fix:
            out += f"\n      fix: {self.fix}"
        return out


STEPS = ("bitstream and .hwh", "IPs", "register offsets", "DMA status", "clock", "network ID",
         "weight image in DDR", "one frame")


def hwh_ips(hwh: Path) -> list[str]:
    """The VLNVs of the modules a ``.hwh`` lists (``<MODULE ... VLNV="...">``)."""
    root = ET.parse(hwh).getroot()
    return [m.get("VLNV", "") for m in root.iter("MODULE")]


def _files(export: Export, bit, hwh) -> str:
    if bit is not None:
        bit = Path(bit)
        if not bit.is_file():
            raise _Fail(f"{bit}: no such bitstream", "build it (make bitstream) and copy it (make deploy)")
    if hwh is None:
        bit, hwh = export.find_bitstream(bit)
    hwh = Path(hwh)
    if not hwh.is_file():
        raise _Fail(f"{hwh}: no hardware handoff beside the bitstream", "copy the .hwh board/bitstream.sh wrote")
    try:
        vlnvs = hwh_ips(hwh)
    except ET.ParseError as e:
        raise _Fail(f"{hwh}: not a hardware handoff ({e})", "copy the .hwh board/bitstream.sh wrote with the .bit")
    if not any(":zq_top:" in v for v in vlnvs):
        raise _Fail(f"{hwh} lists no zq_top IP ({len(vlnvs)} modules)", "this .hwh is another design's: copy the "
                    "pair board/bitstream.sh wrote for this network")
    timing = Path(bit).with_suffix(".json") if bit is not None else None
    if timing is not None and timing.is_file():
        nid = json.loads(timing.read_text()).get("network_id")
        if nid is not None and int(str(nid), 16) != export.network_id:
            raise _Fail(f"{timing} says network 0x{int(str(nid), 16):08x}, the manifest 0x{export.network_id:08x}",
                        "deploy the bitstream built from this export")
    return f"{bit or '(simulation)'}, {hwh.name}: zq_top listed"


class _Fail(Exception):
    def __init__(self, detail: str, fix: str):
        super().__init__(detail)
        self.detail, self.fix = detail, fix


def run_checks(export: Export, *, overlay, allocate, clocks, raw_mmio, clock=time.monotonic, source: str = "",
               bit=None, hwh=None, timing=None, **driver_options) -> list[Check]:
    """The eight steps on pynq(-like) objects; stops at the first failure."""
    from .board import configure_fclk, design_fclk_mhz, open_driver
    from .dma import DMASR, DMASR_ERRORS, S2MM_OFFSET, decode_dmasr
    from .driver import find_ips
    from .registers import RegMap, check_register_offsets, engine_from_hwh

    checks: list[Check] = []
    state: dict = {}

    def files():
        return _files(export, bit, hwh)

    def ips():
        try:
            accel, dma = find_ips(overlay)
        except HostError as e:
            raise _Fail(str(e), "the block design must hold the zq_top IP and an AXI DMA (board/pynq_z2.tcl); "
                        "rebuild the bitstream, or copy the .hwh that belongs to the .bit") from e
        state.update(accel=accel, dma=dma)
        return f"engine {accel}, DMA {dma}"

    def offsets():
        regs = (overlay.ip_dict.get(state["accel"]) or {}).get("registers")
        if not regs:
            return "the .hwh has no register information: not compared"
        rm = RegMap(engine_from_hwh(regs) or "hls")
        try:
            got = check_register_offsets(dict(rm.offsets), regs, ip=state["accel"], regmap_source=rm.source)
        except HostError as e:
            raise _Fail(str(e), "rebuild the bitstream with this checkout, or deploy the host package of the "
                        "checkout the bitstream was built with") from e
        return f"{len(got)} registers at the specification's offsets ({rm.engine} engine)"

    def dma():
        m = raw_mmio(state["dma"])
        srs = {n: int(m.read(off + DMASR)) & 0xFFFFFFFF for n, off in (("MM2S", 0), ("S2MM", S2MM_OFFSET))}
        bad = {n: v for n, v in srs.items() if v & DMASR_ERRORS}
        text = ", ".join(f"{n} {decode_dmasr(v)}" for n, v in srs.items())
        if bad:
            raise _Fail(f"halted with an error: {text}", "an earlier process stopped on a DMA error: reload the "
                        "bitstream (drop --no-download), or run any zynqflow command (the driver resets the DMA "
                        "on open); if it comes back, check the DDR buffers and the HP port wiring")
        return text

    def clk():
        try:
            c = configure_fclk(clocks, None, timing=timing, design_mhz=design_fclk_mhz(overlay))
        except HostError as e:
            raise _Fail(str(e), "set a lower clock (--fclk-mhz) or reload the bitstream, which sets its own") from e
        state["fclk_mhz"] = c["fclk_mhz"]
        return f"FCLK0 {c['fclk_mhz']:g} MHz (limit {c['limit_mhz']:g} MHz: {c['limit_from']})"

    def net_id():
        try:
            drv = open_driver(overlay, export, allocate=allocate, clocks=clocks, raw_mmio=raw_mmio, clock=clock,
                              timing=timing, source=source, **driver_options)
        except HostError as e:
            raise _Fail(str(e), "see the message; the bring-up section of board/README.md lists each error") from e
        state["drv"] = drv
        try:
            hw = drv.check_network_id()
        except HostError as e:
            raise _Fail(str(e), "load the bitstream built from this export, or use the export the bitstream was "
                        "built from (zynqflow info shows both)") from e
        return f"net_id 0x{hw:08x} == the manifest's; {drv.engine} engine (from {drv.engine_from})"

    def weights():
        drv = state["drv"]
        got, want = drv.ddr.weights_in_ddr(), export.weight_image()
        if got != want:
            bad = next(i for i, (x, y) in enumerate(zip(got, want)) if x != y)
            raise _Fail(f"the weight buffer at 0x{drv.bases['wts']:08x} differs from weights.bin at byte {bad}",
                        "another process writes into that memory, or the cache was not flushed: reboot the board")
        wts = drv.regs.read64("wts")
        if wts != drv.bases["wts"]:
            raise _Fail(f"wts = 0x{wts:08x}, the buffer is at 0x{drv.bases['wts']:08x}",
                        "something rewrote the engine's registers: reload the bitstream")
        return f"{len(want)} bytes at 0x{wts:08x} == weights.bin; wts points at them"

    def frame():
        drv = state["drv"]
        try:
            vec, gold = export.vectors()
        except HostError:
            vec = np.zeros((1,) + export.input_shape, np.uint8)
            gold = None
        if gold is None:
            from zynqflow.spec.golden import golden_logits

            gold = golden_logits(export.qnet(), vec[:1])
        try:
            st = drv.classify(vec[:1])
        except HostError as e:
            raise _Fail(str(e), "see the message; if the DMA times out, check the clock and the interrupt "
                        "wiring; reload the bitstream") from e
        if not np.array_equal(st.logits[0], np.asarray(gold[0], np.int64)):
            raise _Fail(f"logits {st.logits[0].tolist()} != golden {np.asarray(gold[0]).tolist()}",
                        "a mismatch is a bug (never a tolerance): report it with this output")
        cyc = st.cycles_last[0] if st.cycles_last and st.cycles_last[0] else None
        return "bit-exact with the golden model" + (f"; {cyc} cycles (measured)" if cyc else "")

    steps = (files, ips, offsets, dma, clk, net_id, weights, frame)
    failed = False
    try:
        for i, (name, fn) in enumerate(zip(STEPS, steps), 1):
            if failed:
                checks.append(Check(i, name, None))
                continue
            try:
                checks.append(Check(i, name, True, fn()))
            except _Fail as f:
                checks.append(Check(i, name, False, f.detail, f.fix))
                failed = True
            except HostError as e:
                checks.append(Check(i, name, False, str(e), "see the message"))
                failed = True
    finally:
        if "drv" in state:
            state["drv"].close()
    return checks


def report(checks: list[Check], out=sys.stdout) -> int:
    for c in checks:
        print(c.line(len(checks)), file=out)
    bad = [c for c in checks if c.ok is False]
    print(f"zynqflow doctor: {'all ' + str(len(checks)) + ' steps passed' if not bad else 'step ' + str(bad[0].step) + ' (' + bad[0].name + ') failed'}",
          file=out)
    return 1 if bad else 0


def main(a, export_of, backend_opts) -> int:
    """The CLI's ``zynqflow doctor`` (``--backend pynq``, the default on a board, or ``rtl``)."""
    from .accelerator import resolve_backend
    from .errors import BackendError

    export = export_of(a)
    name = a.backend or resolve_backend("auto", export, a.bit)
    if name not in ("pynq", "rtl"):
        raise BackendError(f"zynqflow doctor checks a board (--backend pynq) or the RTL simulation (--backend rtl), "
                           f"not {name}")
    print(f"zynqflow doctor: {export.network} (0x{export.network_id:08x}) from {export.dir}, on {name}",
          file=sys.stderr)
    if name == "rtl":             # the rtl backend (an installed extra) runs the checks in its simulation
        from .accelerator import make_backend

        checks = [Check(**c) for c in make_backend("rtl", export, **backend_opts(a, "rtl")).doctor()]
    else:
        from .board import load_overlay

        try:
            bit, hwh = export.find_bitstream(a.bit)
        except HostError as e:
            checks = [Check(1, STEPS[0], False, str(e), "build the bitstream (make bitstream) and deploy it "
                            "(make deploy)")] + [Check(i, n, None) for i, n in enumerate(STEPS[1:], 2)]
            return _out(a, checks)
        import pynq
        from pynq.ps import Clocks

        ol = load_overlay(bit, download=not a.no_download)

        def raw_mmio(ip):
            d = ol.ip_dict[ip]
            return pynq.MMIO(d["phys_addr"], d["addr_range"])

        checks = run_checks(export, overlay=ol, allocate=pynq.allocate, clocks=Clocks, raw_mmio=raw_mmio,
                            source=f"bitstream {bit}", bit=bit, hwh=hwh, timing=bit.with_suffix(".json"),
                            timeout_s=a.timeout)
    return _out(a, checks)


def _out(a, checks) -> int:
    if getattr(a, "json", False):
        print(json.dumps([c.as_dict() for c in checks], indent=1))
        return 1 if any(c.ok is False for c in checks) else 0
    return report(checks)
