"""``zynqflow doctor``: a first bring-up, bottom up, one line per step: passed, or failed with the
fix. It stops at the first failure (what is above it cannot be judged yet); every step catches
every error it meets and names it, so the checklist always prints, whole, on stdout (progress and
any tool's output go to stderr).

====  ======================  ===========================================================
 0    environment             uid (pynq needs root), ``XILINX_XRT``, pynq's version, ``CmaFree``
                              against what the export needs, the FPGA manager's state, the
                              bitstream the PL holds
 1    bitstream and .hwh      both files, **paired by content** (the ``.bit`` header's design, part,
                              Vivado version, date and time against the ``.hwh``), the ``.hwh`` names
                              the engine, the timing record is this network's; then the overlay is
                              loaded (``pynq.Overlay``): the DMA status the PL held is read first
 2    IPs                     ``ip_dict`` has one engine (``zq_top``) and one AXI DMA
 3    register offsets        the ``.hwh``'s registers against the engine specification (fails when
                              nothing could be compared)
 4    DMA status              neither channel halted with an error (DMASR), and what the DMA held
                              before the download (an earlier process's error, which a download hides)
 5    clock                   FCLK0 within what the design met (timing record, or its own clock)
 6    DMA and CMA             the driver opened: pynq's DMA channels, the weight image and scratch
                              area in CMA (``pynq.allocate``), ``wts``/``act`` written
 7    network ID              the engine's ``net_id`` / build against the manifest (read only; the HLS
                              engine answers it at the end of a call: one-beat probe)
 8    weight image in DDR     the buffer holds ``weights.bin`` byte for byte; ``wts`` points at it
 9    one frame               the first test vector through the accelerator == the golden logits
====  ======================  ===========================================================

On the board the objects are pynq's (:func:`board_checks`); ``zynqflow doctor --backend rtl`` runs
the same checks against the RTL simulation (:mod:`zynqflow.sim.rtl.tb_host`, the PYNQ shim).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from .errors import HostError
from .manifest import Export

MEMINFO = "/proc/meminfo"
FPGA_STATE = "/sys/class/fpga_manager/fpga0/state"
IMAGE_XILINX_XRT = "/usr"                  # what the PYNQ v3.x image sets (host/runner.py pins it too)
MAX_BUILD = timedelta(hours=24)            # a .hwh (written when the block design is generated) precedes its .bit
CLOCK_SLACK = timedelta(minutes=2)         # ... and is never newer than it, give or take file-time rounding
_uid = os.geteuid


@dataclass
class Check:
    step: int
    name: str
    ok: bool | None            # None: not run (a step below failed)
    detail: str = ""
    fix: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def line(self, last: int) -> str:
        state = {True: "passed", False: "FAILED", None: "not run"}[self.ok]
        out = f"[{self.step}/{last}] {self.name:22s} {state}" + (f": {self.detail}" if self.detail else "")
        if self.ok is False and self.fix:
            out += f"\n      fix: {self.fix}"
        return out


STEPS = ("environment", "bitstream and .hwh", "IPs", "register offsets", "DMA status", "clock", "DMA and CMA",
         "network ID", "weight image in DDR", "one frame")

# what to do when a step fails with an error that names nothing better
FIXES = {
    "environment": "run it on the PYNQ image as root (the zynqflow command does, through its runner)",
    "bitstream and .hwh": "copy the .bit, .hwh and .json board/bitstream.sh wrote together (make deploy); reboot "
                          "the board if the PL will not load",
    "IPs": "the block design must hold the zq_top IP and an AXI DMA (board/pynq_z2.tcl); rebuild the bitstream, or "
           "copy the .hwh that belongs to the .bit",
    "register offsets": "rebuild the bitstream with this checkout, or deploy the host package of the checkout the "
                        "bitstream was built with",
    "DMA status": "an earlier process stopped on a DMA error: reload the bitstream (drop --no-download), or run any "
                  "zynqflow command (the driver resets the DMA on open); if it comes back, check the DDR buffers "
                  "and the HP port wiring",
    "clock": "set a lower clock (--fclk-mhz) or reload the bitstream, which sets its own",
    "DMA and CMA": "see the message; the bring-up section of board/README.md lists each error",
    "network ID": "load the bitstream built from this export, or use the export the bitstream was built from "
                  "(zynqflow info shows both)",
    "weight image in DDR": "another process writes into that memory, or the cache was not flushed: reboot the board",
    "one frame": "see the message; if the DMA times out, check the clock and the interrupt wiring; reload the "
                 "bitstream",
}


class _Fail(Exception):
    def __init__(self, detail: str, fix: str):
        super().__init__(detail)
        self.detail, self.fix = detail, fix


# ---- the .bit and the .hwh, by content --------------------------------------------------
def bit_header(path) -> dict:
    """The header of a Xilinx ``.bit`` file (as pynq's ``parse_bit_header`` reads it): a length-prefixed
    preamble, then fields 'a' (design;...;Version=...), 'b' (part), 'c' (date), 'd' (time), each a
    2-byte big-endian length and a NUL-terminated string, then 'e' (the configuration data)."""
    data = Path(path).read_bytes()[:4096]
    try:
        off = 2 + struct.unpack(">H", data[:2])[0] + 2
        out = {}
        while True:
            key = chr(data[off])
            off += 1
            if key == "e":
                break
            n = struct.unpack(">H", data[off:off + 2])[0]
            text = data[off + 2:off + 2 + n].rstrip(b"\0").decode("ascii")
            off += 2 + n
            if key == "a":
                parts = text.split(";")
                out["design"] = parts[0]
                out["version"] = next((p.split("=", 1)[1] for p in parts if p.startswith("Version=")), "")
            elif key in "bcd":
                out[{"b": "part", "c": "date", "d": "time"}[key]] = text
            else:
                raise ValueError(f"unknown field {key!r}")
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"not a Xilinx bitstream (no readable header: {e})") from None
    if not {"design", "part", "date", "time"} <= set(out):
        raise ValueError(f"not a Xilinx bitstream (header fields {sorted(out)})")
    return out


def hwh_header(path) -> dict:
    """What a ``.hwh`` says of its build: the block design, part, Vivado version and the time it
    was written, and the VLNVs of its modules."""
    root = ET.parse(path).getroot()
    info = root.find("SYSTEMINFO")
    info = info.attrib if info is not None else {}
    return dict(design=info.get("NAME", ""), part=info.get("DEVICE", "") + info.get("PACKAGE", ""),
                version=root.get("VIVADOVERSION", ""), timestamp=root.get("TIMESTAMP", ""),
                vlnvs=[m.get("VLNV", "") for m in root.iter("MODULE")])


def pair(bit, hwh) -> str:
    """Check that ``hwh`` was written by the build that wrote ``bit`` (raises :class:`_Fail`)."""
    try:
        b = bit_header(bit)
    except ValueError as e:
        raise _Fail(f"{bit}: {e}", "copy the .bit board/bitstream.sh wrote") from None
    h = hwh_header(hwh)
    fix = ("copy the .bit and the .hwh of one build together (board/bitstream.sh writes both into bitstreams/; "
           "make deploy copies them)")
    design = b["design"][:-len("_wrapper")] if b["design"].endswith("_wrapper") else b["design"]
    if design != h["design"]:
        raise _Fail(f"{Path(bit).name} is design {b['design']}, {Path(hwh).name} describes {h['design'] or '(none)'}",
                    fix)
    if b["part"] != h["part"]:
        raise _Fail(f"{Path(bit).name} is for part {b['part']}, {Path(hwh).name} for {h['part']}", fix)
    if b.get("version") and h["version"] and b["version"] != h["version"]:
        raise _Fail(f"{Path(bit).name} was written by Vivado {b['version']}, {Path(hwh).name} by {h['version']}", fix)
    try:
        t_bit = datetime.strptime(f"{b['date']} {b['time']}", "%Y/%m/%d %H:%M:%S")
        t_hwh = datetime.strptime(h["timestamp"], "%a %b %d %H:%M:%S %Y")
    except ValueError as e:
        raise _Fail(f"cannot compare build times ({e}): {Path(bit).name} {b['date']} {b['time']}, "
                    f"{Path(hwh).name} '{h['timestamp']}'", fix) from None
    if t_hwh > t_bit + CLOCK_SLACK:
        raise _Fail(f"{Path(hwh).name} ({t_hwh}) is newer than {Path(bit).name} ({t_bit}): it comes from a later build",
                    fix)
    if t_bit - t_hwh > MAX_BUILD:
        raise _Fail(f"stale {Path(hwh).name}: written {t_hwh}, {t_bit - t_hwh} before {Path(bit).name} ({t_bit}); "
                    "the .hwh of a build is written when its block design is generated, less than "
                    f"{MAX_BUILD.total_seconds() / 3600:g} h before its bitstream", fix)
    return f"{design}, {b['part']}, Vivado {b.get('version') or h['version']}, .hwh {t_hwh} before .bit {t_bit}"


def _files(export: Export, bit, hwh) -> tuple[str, Path | None]:
    if bit is not None:
        bit = Path(bit)
        if not bit.is_file():
            raise _Fail(f"{bit}: no such bitstream", "build it (make bitstream) and copy it (make deploy)")
    if hwh is None:
        try:
            bit, hwh = export.find_bitstream(bit)
        except HostError as e:
            raise _Fail(str(e), "build the bitstream (make bitstream) and deploy it (make deploy)") from e
    hwh = Path(hwh)
    if not hwh.is_file():
        raise _Fail(f"{hwh}: no hardware handoff beside the bitstream", "copy the .hwh board/bitstream.sh wrote")
    try:
        h = hwh_header(hwh)
    except ET.ParseError as e:
        raise _Fail(f"{hwh}: not a hardware handoff ({e})", "copy the .hwh board/bitstream.sh wrote with the .bit")
    if not any(":zq_top:" in v for v in h["vlnvs"]):
        raise _Fail(f"{hwh} lists no zq_top IP ({len(h['vlnvs'])} modules)", "this .hwh is another design's: copy "
                    "the pair board/bitstream.sh wrote for this network")
    paired = pair(bit, hwh) if bit is not None else "no .bit (simulation)"
    timing = Path(bit).with_suffix(".json") if bit is not None else None
    if timing is not None and timing.is_file():
        nid = json.loads(timing.read_text()).get("network_id")
        if nid is not None and int(str(nid), 16) != export.network_id:
            raise _Fail(f"{timing} says network 0x{int(str(nid), 16):08x}, the manifest 0x{export.network_id:08x}",
                        "deploy the bitstream built from this export")
    return f"{Path(bit).name if bit is not None else '(simulation)'}, {hwh.name}: zq_top listed; {paired}", bit


# ---- step 0 on the board -------------------------------------------------------------------
def cma_needed(export: Export) -> int:
    """Bytes of CMA the driver allocates (weight image, scratch area, frame and probe buffers), in pages."""
    page = 4096
    sizes = [export.weight_image_bytes, export.scratch_bytes] + [export.bytes_per_frame] * 2 + \
        [export.num_classes * 4] * 3 + [4]
    return sum(-(-s // page) * page for s in sizes if s)


def cma_free() -> int | None:
    """``CmaFree`` of ``/proc/meminfo``, in bytes (None when the kernel reports none)."""
    try:
        for line in Path(MEMINFO).read_text().splitlines():
            if line.startswith("CmaFree:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def board_environment(export: Export, progress: bool = True) -> str:
    """Step 0 on a PYNQ board (raises :class:`_Fail` naming what is wrong)."""
    from .board import loaded_bitstream
    from .progress import step

    uid = _uid()
    if uid != 0:
        raise _Fail(f"uid {uid}: pynq maps the PL's registers (/dev/mem), programs the FPGA manager and allocates CMA "
                    "as root only", "run the zynqflow command (its root runner), or sudo -E python3 -m "
                    "zynqflow.host.cli doctor in the PYNQ venv")
    xrt = os.environ.get("XILINX_XRT")
    if not xrt:
        raise _Fail("XILINX_XRT is not set: pynq 3.x loads $XILINX_XRT/lib/libxrt_core.so when it is imported",
                    f"export XILINX_XRT={IMAGE_XILINX_XRT} (the PYNQ image's value; the zynqflow command sets it)")
    if not Path(xrt).is_dir():
        raise _Fail(f"XILINX_XRT={xrt}: no such directory", f"export XILINX_XRT={IMAGE_XILINX_XRT}")
    try:
        with step("importing pynq", progress):
            import pynq
    except Exception as e:  # noqa: BLE001 - any import failure is this step's
        raise _Fail(f"import pynq failed: {type(e).__name__}: {e}", "run it in the PYNQ venv "
                    "(/usr/local/share/pynq-venv) or through the zynqflow command") from e
    version = getattr(pynq, "__version__", "?")
    free, need = cma_free(), cma_needed(export)
    if free is not None and free < need:
        raise _Fail(f"CmaFree {free >> 10} KiB, the driver needs {need >> 10} KiB (weight image, scratch area, frame "
                    "buffers)", "free the CMA other processes hold (a Jupyter kernel with an overlay open: shut it "
                    "down), or enlarge the CMA area (cma=<size>M on the kernel command line)")
    state = None
    if Path(FPGA_STATE).is_file():
        state = Path(FPGA_STATE).read_text().strip()
        if state not in ("operating", "unknown"):
            raise _Fail(f"FPGA manager state '{state}' ({FPGA_STATE}): the last programming failed",
                        "reboot the board, then run the doctor again (it loads the bitstream)")
    held = loaded_bitstream()
    return (f"uid 0, XILINX_XRT={xrt}, pynq {version}, CmaFree "
            + (f"{free >> 10} KiB (needs {need >> 10} KiB)" if free is not None else "unknown (no CmaFree)")
            + f", FPGA manager {state or 'state unknown'}, PL holds {held or 'unknown'}")


# ---- the steps -----------------------------------------------------------------------------
def _dma_status(m) -> dict:
    from .dma import DMASR, S2MM_OFFSET

    return {n: int(m.read(off + DMASR)) & 0xFFFFFFFF for n, off in (("MM2S", 0), ("S2MM", S2MM_OFFSET))}


def _failure(name: str, e: BaseException) -> tuple[str, str]:
    """(detail, fix) of an error a step did not expect by name."""
    msg = f"{type(e).__name__}: {e}"
    text = str(e)
    if isinstance(e, RuntimeError) and "allocate failed" in text.lower():
        return (f"pynq.allocate: {text}: the contiguous memory (CMA) is exhausted",
                "free the CMA other processes hold (a Jupyter kernel with an overlay open: shut it down; zynqflow "
                "commands free theirs on exit), or enlarge the CMA area (cma=<size>M on the kernel command line); "
                "step 0 shows CmaFree")
    if isinstance(e, PermissionError) or "permission denied" in text.lower():
        return msg, "run as root (the zynqflow command does, through its runner)"
    if "xrt" in text.lower() or "no devices found" in text.lower():
        return msg, f"export XILINX_XRT={IMAGE_XILINX_XRT} before pynq is imported (the zynqflow command sets it)"
    if isinstance(e, HostError):
        return str(e), FIXES[name]
    return msg, FIXES[name]


def run_checks(export: Export, *, platform_for, overlay=None, load=None, environment=None, bit=None, hwh=None,
               **driver_options) -> list[Check]:
    """The ten steps; stops at the first failure. ``environment()``: step 0 (returns what it found,
    raises :class:`_Fail`); ``bit``, ``hwh``: the files (default: the export's bitstream and its
    ``.hwh``); ``load(bit)``: loads the overlay in step 1 and returns ``(overlay, the DMASRs the PL held
    before the download, or None)``, or ``overlay`` when it is loaded already (a simulation);
    ``platform_for(overlay, bit)``: the objects beside it (:class:`~zynqflow.host.board.Platform`)."""
    from .board import configure_fclk, design_fclk_mhz, open_driver
    from .dma import DMASR_ERRORS, decode_dmasr
    from .driver import find_ips
    from .registers import RegMap, check_register_offsets, engine_from_hwh

    state: dict = dict(overlay=overlay, before=None)

    def env():
        return environment() if environment is not None else "not checked (no environment given)"

    def files():
        text, bit_path = _files(export, bit, hwh)
        if state["overlay"] is None:
            try:
                state["overlay"], state["before"] = load(bit_path)
            except _Fail:
                raise
            except Exception as e:  # noqa: BLE001 - named with the step's fix
                detail, fix = _failure("bitstream and .hwh", e)
                if isinstance(e, ET.ParseError) or "parse" in str(e).lower() or "metadata" in str(e).lower():
                    fix = "the .hwh cannot be parsed: copy the .hwh board/bitstream.sh wrote with the .bit"
                raise _Fail(f"loading the overlay: {detail}", fix) from e
            text += "; overlay loaded"
        state["platform"] = platform_for(state["overlay"], bit_path)
        return text

    def ips():
        try:
            accel, dma = find_ips(state["overlay"])
        except HostError as e:
            raise _Fail(str(e), FIXES["IPs"]) from e
        state.update(accel=accel, dma=dma)
        return f"engine {accel}, DMA {dma}"

    def offsets():
        regs = (state["overlay"].ip_dict.get(state["accel"]) or {}).get("registers")
        if not regs:
            raise _Fail(f"the .hwh lists no registers for {state['accel']}: nothing to compare the driver's offsets "
                        "with", "use the .hwh Vivado wrote (its IP's register map comes from the IP's component.xml)")
        rm = RegMap(engine_from_hwh(regs) or "hls")
        try:
            got = check_register_offsets(dict(rm.offsets), regs, ip=state["accel"], regmap_source=rm.source)
        except HostError as e:
            raise _Fail(str(e), FIXES["register offsets"]) from e
        return f"{len(got)} registers at the specification's offsets ({rm.engine} engine)"

    def dma():
        raw = state["platform"].raw_mmio
        if raw is None:
            return "not read (no raw MMIO)"
        srs = _dma_status(raw(state["dma"]))
        text = ", ".join(f"{n} {decode_dmasr(v)}" for n, v in srs.items())
        if any(v & DMASR_ERRORS for v in srs.values()):
            raise _Fail(f"halted with an error: {text}", FIXES["DMA status"])
        before = state["before"]
        if before is not None:
            was = ", ".join(f"{n} {decode_dmasr(v)}" for n, v in before.items())
            if any(v & DMASR_ERRORS for v in before.values()):
                text += (f"; before the download the DMA was halted with an error ({was}): an earlier process met "
                         "a DMA error (the download reset it)")
            else:
                text += f"; before the download: {was}"
        return text

    def clk():
        p = state["platform"]
        try:
            c = configure_fclk(p.clocks, None, timing=p.timing, design_mhz=design_fclk_mhz(state["overlay"]))
        except HostError as e:
            raise _Fail(str(e), FIXES["clock"]) from e
        return f"FCLK0 {c['fclk_mhz']:g} MHz (limit {c['limit_mhz']:g} MHz: {c['limit_from']})"

    def dma_cma():
        drv = open_driver(export, state["overlay"], platform=state["platform"], **driver_options)
        state["drv"] = drv
        b = drv.bases
        return (f"DMA channels started{' (reset first: ' + ', '.join(drv.open_log[:1]) + ')' if drv.open_reset else ''}"
                f"; weight image ({export.weight_image_bytes} bytes) at 0x{b['wts']:08x}, scratch at 0x{b['act']:08x}")

    def net_id():
        drv = state["drv"]
        try:
            hw = drv.check_network_id()
        except HostError as e:
            raise _Fail(str(e), FIXES["network ID"]) from e
        return (f"net_id 0x{hw:08x} == the manifest's{' (one-beat probe)' if drv.id_probed else ''}; {drv.engine} "
                f"engine (from {drv.engine_from})")

    def weights():
        drv = state["drv"]
        got, want = drv.ddr.weights_in_ddr(), export.weight_image()
        if got != want:
            bad = next(i for i, (x, y) in enumerate(zip(got, want)) if x != y)
            raise _Fail(f"the weight buffer at 0x{drv.bases['wts']:08x} differs from weights.bin at byte {bad}",
                        FIXES["weight image in DDR"])
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
        st = drv.classify(vec[:1])
        if not np.array_equal(st.logits[0], np.asarray(gold[0], np.int64)):
            raise _Fail(f"logits {st.logits[0].tolist()} != golden {np.asarray(gold[0]).tolist()}",
                        "a mismatch is a bug (never a tolerance): report it with this output")
        cyc = st.cycles_last[0] if st.cycles_last and st.cycles_last[0] else None
        return "bit-exact with the golden model" + (f"; {cyc} cycles (measured)" if cyc else "")

    steps = (env, files, ips, offsets, dma, clk, dma_cma, net_id, weights, frame)
    checks: list[Check] = []
    failed = False
    try:
        for i, (name, fn) in enumerate(zip(STEPS, steps)):
            if failed:
                checks.append(Check(i, name, None))
                continue
            try:
                checks.append(Check(i, name, True, fn()))
            except _Fail as f:
                checks.append(Check(i, name, False, f.detail, f.fix))
                failed = True
            except Exception as e:  # noqa: BLE001 - every error is this step's, named, with its fix
                checks.append(Check(i, name, False, *_failure(name, e)))
                failed = True
    finally:
        if "drv" in state:
            with contextlib.suppress(Exception):
                state["drv"].close()
    return checks


def board_checks(export: Export, bit=None, download: bool = True, **driver_options) -> list[Check]:
    """The steps on a PYNQ board, with pynq's objects: pynq is imported in step 0, the overlay loaded
    in step 1 (first without downloading, to read the DMA status the PL holds when it holds this
    bitstream; then downloaded unless ``download=False``)."""
    from .board import load_overlay, loaded_bitstream, pynq_platform

    def environment():
        return board_environment(export)

    def load(b):
        import pynq

        b = Path(b)
        held = loaded_bitstream()
        same = held is not None and Path(held).name == b.name
        if not download and not same:
            load_overlay(b, download=False)          # its BackendError names what the PL holds
        ol = pynq.Overlay(str(b), download=False)
        before = None
        if same:                                      # this design is in the PL: its DMA is at this address
            from .driver import find_ips

            with contextlib.suppress(Exception):
                _, dma = find_ips(ol)
                d = ol.ip_dict[dma]
                before = _dma_status(pynq.MMIO(d["phys_addr"], d["addr_range"]))
        if download:
            ol.download()
        return ol, before

    return run_checks(export, platform_for=pynq_platform, load=load, environment=environment, bit=bit,
                      **driver_options)


def report(checks: list[Check], out=None) -> int:
    out = out or sys.stdout
    last = len(checks) - 1
    for c in checks:
        print(c.line(last), file=out)
    bad = [c for c in checks if c.ok is False]
    print(f"zynqflow doctor: {'all ' + str(len(checks)) + ' steps passed' if not bad else 'step ' + str(bad[0].step) + ' (' + bad[0].name + ') failed'}",
          file=out, flush=True)
    return 1 if bad else 0


@contextlib.contextmanager
def stdout_to_stderr():
    """Everything written to stdout meanwhile goes to stderr -- Python's ``sys.stdout`` and file
    descriptor 1 (a child's output: a simulator's build, a library's prints) -- so that the
    checklist alone goes to stdout."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        saved = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


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
          file=sys.stderr, flush=True)
    with stdout_to_stderr():
        if name == "rtl":         # the rtl backend (an installed extra) runs the checks in its simulation
            from .accelerator import make_backend

            try:
                checks = [Check(**c) for c in make_backend("rtl", export, **backend_opts(a, "rtl")).doctor()]
            except Exception as e:  # noqa: BLE001 - the simulation itself failed: said as its steps
                checks = [Check(0, STEPS[0], False, f"the RTL simulation did not run: {type(e).__name__}: {e}",
                                "see the message (make rtl-sim builds the simulator)")] + \
                    [Check(i, n, None) for i, n in enumerate(STEPS[1:], 1)]
        else:
            checks = board_checks(export, a.bit, download=not a.no_download, timeout_s=a.timeout)
    return _out(a, checks)


def _out(a, checks) -> int:
    if getattr(a, "json", False):
        print(json.dumps([c.as_dict() for c in checks], indent=1), flush=True)
        return 1 if any(c.ok is False for c in checks) else 0
    return report(checks)
