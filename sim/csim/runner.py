"""C simulation of the HLS engine (``hls/zq_top.cpp``) with plain g++.

The engine is compiled against one export directory (``net_params.h``) and
the ap_types headers shipped with hls4ml (no Vitis needed):

* :func:`build` -> a shared library (``hls/csim_lib.cpp``) driven through
  ctypes by :class:`CSim`; the library holds a simulated DDR with the export's
  weight image (``weights.bin``) and the activation scratch area;
* :func:`build_testbench` / :func:`run_testbench` -> the C testbench
  ``hls/tb/tb_zq_top.cpp`` on the export's test vectors;
* :func:`build_dsp_test` / :func:`run_dsp_test` -> the exhaustive check of the
  packed DSP48E1 arithmetic (``hls/tb/tb_packed_dsp.cpp``).

The engine's processes (weight reader, stem, fill reader, core, DDR writer, output)
run under the project's C-simulation scheduler (``hls/csim/zq_csim.h``): every stream
has its declared depth and blocks when full, and a deadlock fails the run with a
report naming the blocked processes and streams (:class:`CSimError`). :data:`MODES`:
``lockstep`` (default: the processes stepped in turn on one thread, one loop iteration
per clock cycle: deterministic cycle and stall counts, :meth:`CSim.process_stats`),
``threads`` (each process in its own thread) and ``sequential`` (Vitis's own
``csim_design`` semantics: in program order over unbounded streams, which can show no
deadlock).

``make csim`` (:mod:`zynqflow.bench.csim_eval`) runs the testbench and compares a
test set with the golden model. Builds are cached in ``<export_dir>/../csim/``
(``csim-<name>/`` for an export directory not named ``export``) and redone only
when a source, a header or ``net_params.h`` is newer than the output.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from zynqflow.spec import engine as E
from zynqflow.spec.cycles_hls import COUNTERS  # hls/zq_count.h's enum Counter, in order
from zynqflow.spec.golden import check_frames
from zynqflow.spec.paths import REPO, file_lock
from zynqflow.spec.procs import build_line, write_log

HLS_DIR = REPO / "hls"
HEADERS = tuple(sorted(p.relative_to(HLS_DIR).as_posix() for p in [*HLS_DIR.glob("*.h"), *HLS_DIR.glob("csim/*.h")]))
CSIM_SOURCES = ("csim/zq_csim.cpp",)   # the C-simulation scheduler, linked into every C-sim build
# Sources that include nothing of the export (only hls/csim/): compiled once for each set of flags
# into build/sim/csim-common/ and linked into every build that has those flags
SHARED_SOURCES = frozenset(CSIM_SOURCES)
SHARED_OBJ_DIR = REPO / "build" / "sim" / "csim-common"
MODES = ("threads", "lockstep", "sequential")   # hls/csim/zq_csim.h Mode, in order
HAZARDS = ("none", "late_stores", "late_reads")  # hls/csim/zq_csim.h Hazard, in order
CXXFLAGS = ["-O2", "-std=c++14", "-fPIC", "-Wall", "-pthread",
            # function-local statics of the engine's headers (its RAMs) stay per library: several
            # networks' libraries are loaded in one process
            "-fno-gnu-unique",
            # HLS idiom: pragmas and loop labels are for Vitis, not g++
            "-Wno-unknown-pragmas", "-Wno-unused-label",
            # false positives inside the ap_private.h default constructors and range helpers
            "-Wno-uninitialized", "-Wno-maybe-uninitialized", "-Wno-aggressive-loop-optimizations"]
REG_NAMES = ("status", "frames_done", "net_id", "build_params", "engine_info")
N_REGS = len(REG_NAMES)
ERROR_LOGIT = E.ERROR_LOGIT


class CSimError(RuntimeError):
    """The C simulation cannot be built or run (names the command or file)."""


# ---- toolchain ---------------------------------------------------------------
def ap_types_dir() -> Path:
    """The ap_types headers (ap_int.h, hls_stream.h) of hls4ml, or $ZQ_AP_TYPES."""
    env = os.environ.get("ZQ_AP_TYPES")
    if env:
        d = Path(env)
    else:
        spec = importlib.util.find_spec("hls4ml")  # locate without importing it
        if spec is None or not spec.origin:
            raise CSimError("hls4ml is not installed: the C simulation needs its ap_types headers "
                            "(pip install hls4ml, or set ZQ_AP_TYPES=<dir with ap_int.h>)")
        d = Path(spec.origin).parent / "templates" / "vivado" / "ap_types"
    if not (d / "ap_int.h").is_file() or not (d / "hls_stream.h").is_file():
        raise CSimError(f"{d}: no ap_int.h / hls_stream.h (set ZQ_AP_TYPES to the ap_types directory)")
    return d


def compiler() -> str:
    """The C++ compiler ($CXX, default g++), with a clear error when missing."""
    cxx = os.environ.get("CXX", "g++")
    path = shutil.which(cxx)
    if path is None:
        raise CSimError(f"C++ compiler '{cxx}' not found on PATH: the C simulation runs "
                        f"`{cxx} {' '.join(CXXFLAGS[:3])} -shared ...`; install g++ "
                        "(e.g. apt-get install g++) or set CXX")
    return path


def _export_dir(export_dir) -> Path:
    d = Path(export_dir)
    if not (d / "net_params.h").is_file():
        raise CSimError(f"{d}: no net_params.h (run the exporter: python -m zynqflow.export.exporter)")
    return d.resolve()


def _default_out(export_dir: Path) -> Path:
    """build/<net>/export -> build/<net>/csim; any other export directory gets its own
    csim-<name> beside it (a library file must never be rebuilt for another network
    while a process has it loaded)."""
    return export_dir.parent / ("csim" if export_dir.name == "export" else f"csim-{export_dir.name}")


def _newer(target: Path, deps: list[Path]) -> bool:
    """True when target is missing or older than any dependency."""
    if not target.exists():
        return True
    t = target.stat().st_mtime
    return any(d.stat().st_mtime > t for d in deps)


def _run_cmd(cmd: list[str], log: list | None = None) -> None:
    """Run a compiler command quietly; its output is appended to ``log`` (command, output)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise CSimError(f"cannot run `{shlex.join(cmd)}`: {e}") from e
    if log is not None:
        log.append((cmd, r.stdout + r.stderr))
    if r.returncode != 0:
        raise CSimError(f"compilation failed ({r.returncode}): {shlex.join(cmd)}\n{r.stderr[-6000:]}")


def _compile(sources: list[str], export_dir: Path, out: Path, flavor: str, defines: list[str],
             shared: bool) -> Path:
    """Compile ``sources`` (relative to hls/) to objects (in parallel, cached)
    and link them into ``out``; returns ``out``. Processes building into the same objects take turns."""
    with file_lock(out.parent / "obj" / f".{flavor}.lock"):
        return _compile_locked(sources, export_dir, out, flavor, defines, shared)


def _compile_locked(sources: list[str], export_dir: Path, out: Path, flavor: str, defines: list[str],
                    shared: bool) -> Path:
    cxx = compiler()
    inc = [f"-I{export_dir}", f"-I{HLS_DIR}", "-isystem", str(ap_types_dir())]
    deps = [HLS_DIR / h for h in HEADERS] + [export_dir / "net_params.h"]
    obj_dir = out.parent / "obj" / flavor
    obj_dir.mkdir(parents=True, exist_ok=True)
    # The objects belong to one net_params.h and one command line: when either
    # changes (e.g. another export directory sharing this output directory),
    # everything is rebuilt, whatever the timestamps say.
    st = (export_dir / "net_params.h").stat()
    stamp = json.dumps(dict(net_params=str(export_dir / "net_params.h"), size=st.st_size,
                            mtime_ns=st.st_mtime_ns, cmd=[cxx, *CXXFLAGS, *defines, *inc]), sort_keys=True)
    stamp_file = obj_dir / "build.stamp"
    if not stamp_file.is_file() or stamp_file.read_text() != stamp:
        for o in obj_dir.glob("*.o"):
            o.unlink()
        out.unlink(missing_ok=True)
        stamp_file.write_text(stamp)
    jobs: list[tuple[list[str], Path, Path]] = []  # (command, temporary output, object)
    objs = []
    for src in sources:
        s = HLS_DIR / src
        if src in SHARED_SOURCES:   # named by its command and the text it reads: never stale
            cmd = [cxx, *CXXFLAGS, *defines, *inc[1:]]
            key = hashlib.sha1(json.dumps(cmd).encode())
            for f in [s, *sorted((HLS_DIR / "csim").glob("*.h"))]:
                key.update(f.read_bytes())
            o = SHARED_OBJ_DIR / f"{Path(src).stem}-{key.hexdigest()[:16]}.o"
            SHARED_OBJ_DIR.mkdir(parents=True, exist_ok=True)
            stale = not o.is_file()
        else:
            cmd = [cxx, *CXXFLAGS, *defines, *inc]
            o = obj_dir / (Path(src).stem + ".o")
            stale = _newer(o, [s] + deps)
        objs.append(o)
        if stale:
            tmp = o.with_name(f".{o.name}.{os.getpid()}.tmp")
            jobs.append(([*cmd, "-c", str(s), "-o", str(tmp)], tmp, o))

    entries: list = []   # (command, output): the build log, one line on the console
    log = obj_dir / "build.log"

    def one(job):
        cmd, tmp, o = job
        _run_cmd(cmd, entries)
        os.replace(tmp, o)

    t0 = time.perf_counter()
    try:
        if jobs:   # g++ runs in its own processes: these threads only wait for them
            with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as ex:
                list(ex.map(one, jobs))
        if not (jobs or _newer(out, objs)):
            return out
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        _run_cmd([cxx, "-pthread", *(["-shared"] if shared else []), *map(str, objs), "-o", str(tmp)], entries)
        os.replace(tmp, out)
    except CSimError as e:
        write_log(log, entries)
        raise CSimError(f"{e}\nfull build log: {log}") from None
    write_log(log, entries)
    net = export_dir.parent.name if export_dir.name == "export" else export_dir.name
    build_line(f"the C simulation of {net} ({out.name}, {flavor}, g++)", time.perf_counter() - t0, log)
    return out


def build(export_dir, out_dir=None, native: bool = True, count: bool = False, guard: int | None = None) -> Path:
    """Compile the C-simulation library for ``export_dir`` (cached).

    ``native`` builds with ``-DZQ_CSIM_NATIVE -O3`` (native bytes and int64 in
    the MAC datapath, the same packed-DSP arithmetic and the same bits, ~15x
    faster); ``native=False`` compiles exactly the code Vitis synthesizes.
    ``count`` adds ``-DZQ_COUNT_ITERATIONS``: every pipelined loop counts its entries
    and iterations per layer (:meth:`CSim.loop_counts`). ``guard``: the core's AVAIL_GUARD and
    RELEASE_GUARD shortened to this many iterations (``-DZQ_CSIM_GUARD``: a build that shows what
    the guards keep apart, :meth:`CSim.set_hazard`). Returns the ``.so`` path
    (default ``<export_dir>/../csim/libzq_csim.so``)."""
    export_dir = _export_dir(export_dir)
    out_dir = Path(out_dir) if out_dir else _default_out(export_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if guard is not None and int(guard) < 1:
        raise ValueError(f"guard={guard}: at least one iteration")
    flavor = ("native" if native else "exact") + ("-count" if count else "") + (f"-guard{int(guard)}" if guard else "")
    name = "libzq_csim.so" if flavor == "native" else f"libzq_csim_{flavor.replace('-', '_')}.so"
    defines = (["-DZQ_CSIM_NATIVE", "-O3"] if native else []) + (["-DZQ_COUNT_ITERATIONS"] if count else [])
    defines += [f"-DZQ_CSIM_GUARD={int(guard)}"] if guard else []
    return _compile(["zq_top.cpp", "csim_lib.cpp", *CSIM_SOURCES], export_dir, out_dir / name, flavor,
                    defines + ["-fvisibility=hidden"], shared=True)


def build_testbench(export_dir, out_dir=None) -> Path:
    """Compile ``hls/tb/tb_zq_top.cpp`` with the engine (exact HLS types)."""
    export_dir = _export_dir(export_dir)
    out_dir = Path(out_dir) if out_dir else _default_out(export_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _compile(["zq_top.cpp", "tb/tb_zq_top.cpp", *CSIM_SOURCES], export_dir, out_dir / "tb_zq_top", "exact",
                    [], shared=False)


def run_testbench(export_dir, out_dir=None, vectors_dir=None, quiet: bool = False, max_frames: int | None = None,
                  protocol: bool = True, mode: str = "lockstep") -> int:
    """Build (if needed) and run the testbench on ``vectors_dir`` (default the
    export directory: vectors_in/out.bin, weights.bin); returns its exit status
    (0 pass, 1 mismatch or a deadlock, 2 missing or malformed files). ``protocol=False``
    skips the protocol checks (what a short co-simulation does); ``mode``: the C simulation's
    scheduler (:data:`MODES`)."""
    tb = build_testbench(export_dir, out_dir)
    vdir = Path(vectors_dir) if vectors_dir else Path(export_dir)
    cmd = [str(tb), str(vdir)] + ([str(-1 if max_frames is None else max_frames)]
                                  if max_frames is not None or not protocol else [])
    if not protocol:
        cmd.append("0")
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, ZQ_CSIM_MODE=mode))
    if not quiet:
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
    return r.returncode


def build_dsp_test(out_dir) -> Path:
    """Compile ``hls/tb/tb_packed_dsp.cpp`` (no export needed) into ``out_dir``."""
    cxx = compiler()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    src = HLS_DIR / "tb" / "tb_packed_dsp.cpp"
    out = out_dir / "tb_packed_dsp"
    if _newer(out, [src, HLS_DIR / "zq_dsp.h"]):
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        _run_cmd([cxx, *CXXFLAGS, f"-I{HLS_DIR}", "-isystem", str(ap_types_dir()), str(src), "-o", str(tmp)])
        os.replace(tmp, out)
    return out


def run_dsp_test(out_dir, quiet: bool = False) -> tuple[int, str]:
    """Build and run the exhaustive packed-DSP check; returns (exit status, output)."""
    r = subprocess.run([str(build_dsp_test(out_dir))], capture_output=True, text=True)
    if not quiet:
        sys.stdout.write(r.stdout)
    return r.returncode, r.stdout


# ---- the library -------------------------------------------------------------
def frame_beats(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One uint8 HWC frame -> (32-bit beats, TLAST flags) as the stem expects."""
    b = np.ascontiguousarray(frame, dtype=np.uint8).ravel()
    if b.size % 4:
        raise ValueError(f"frame of {b.size} bytes is not a whole number of 32-bit beats")
    beats = b.view("<u4").astype(np.uint32)
    last = np.zeros(beats.size, np.uint8)
    last[-1] = 1
    return beats, last


class CSim:
    """The C-simulated engine of one export, through ctypes.

    The library holds a simulated DDR: the export's weight image at
    ``default_bases["wts"]`` (a nonzero address), a spare slot for a second image
    at ``default_bases["wts_alt"]``, and the activation scratch area at
    ``default_bases["act"]``; :meth:`set_bases` writes the ``wts`` / ``act``
    registers, :meth:`ddr_write` / :meth:`ddr_read` reach the memory.
    The library keeps the engine's static state (counters, weight cache, DDR)
    per process and per library file: two ``CSim`` objects on the same ``.so``
    share it (each constructor reloads the image, resets the bases and resets the engine).

    ``mode`` (:data:`MODES`) is the scheduler's mode for this library (kept per library file
    like the rest of its state); a run that deadlocks raises :class:`CSimError` with the
    watchdog's report and resets the engine."""

    def __init__(self, export_dir, lib=None, native: bool = True, out_dir=None, count: bool = False,
                 mode: str = "lockstep", guard: int | None = None):
        self.export_dir = _export_dir(export_dir)
        self.manifest = json.loads((self.export_dir / "manifest.json").read_text())
        self.lib_path = Path(lib) if lib else build(self.export_dir, out_dir, native=native, count=count, guard=guard)
        try:
            self._lib = ctypes.CDLL(str(self.lib_path))
        except OSError as e:
            raise CSimError(f"{self.lib_path}: cannot load ({e})") from e
        L = self._lib
        vp, u64 = ctypes.c_void_p, ctypes.c_uint64
        for name, args, res in (
                ("zq_run", [vp, ctypes.c_int, vp, vp], ctypes.c_int),
                ("zq_send_raw", [vp, vp, ctypes.c_int, vp, ctypes.c_int], ctypes.c_int),
                ("zq_regs", [vp], None), ("zq_reset", [], None), ("zq_net_id", [], ctypes.c_uint32),
                ("zq_init", [ctypes.c_char_p], ctypes.c_int), ("zq_last_error", [], ctypes.c_char_p),
                ("zq_ddr_write", [u64, vp, u64], ctypes.c_int), ("zq_ddr_read", [u64, vp, u64], ctypes.c_int),
                ("zq_set_bases", [u64, u64], ctypes.c_int), ("zq_get_bases", [vp], None),
                ("zq_default_bases", [vp], None), ("zq_image_bytes", [], u64), ("zq_scratch_bytes", [], u64),
                ("zq_ddr_bytes", [], u64), ("zq_loop_counts", [vp, ctypes.c_int, ctypes.c_int], ctypes.c_int),
                ("zq_n_layers", [], ctypes.c_int), ("zq_set_mode", [ctypes.c_int], ctypes.c_int),
                ("zq_get_mode", [], ctypes.c_int), ("zq_set_stream_depth", [ctypes.c_char_p, ctypes.c_int], None),
                ("zq_csim_stats", [ctypes.c_char_p, ctypes.c_int, ctypes.c_int], ctypes.c_int),
                ("zq_set_hazard", [ctypes.c_int, ctypes.c_int], ctypes.c_int), ("zq_guards", [vp], None)):
            f = getattr(L, name)
            f.argtypes, f.restype = args, res
        inp = self.manifest["input"]
        self.input_shape = tuple(inp["shape"])
        self.num_classes = int(self.manifest["output"]["classes"])
        self.network_id = int(self.manifest["network_id_int"])
        mem = self.manifest["memory"]
        if (L.zq_in_bytes() != inp["bytes_per_frame"] or L.zq_n_classes() != self.num_classes
                or L.zq_net_id() != self.network_id or L.zq_image_bytes() != mem["weight_image_bytes"]
                or L.zq_scratch_bytes() != mem["scratch_bytes"]):
            raise CSimError(f"{self.lib_path} was built for network 0x{L.zq_net_id():08x} (weight image "
                            f"{L.zq_image_bytes()} B, scratch {L.zq_scratch_bytes()} B), the manifest in "
                            f"{self.export_dir} is {self.manifest['network_id']} ({mem['weight_image_bytes']} B, "
                            f"{mem['scratch_bytes']} B): rebuild it")
        if L.zq_init(str(self.export_dir).encode()) != 0:
            raise CSimError(f"C simulation: {L.zq_last_error().decode(errors='replace')}")
        b = np.zeros(3, np.uint64)
        L.zq_default_bases(self._ptr(b))
        self.default_bases = dict(wts=int(b[0]), wts_alt=int(b[1]), act=int(b[2]))
        self.image_bytes = int(L.zq_image_bytes())
        self.scratch_bytes = int(L.zq_scratch_bytes())
        self.ddr_bytes = int(L.zq_ddr_bytes())
        self.set_mode(mode)
        self.set_hazard("none")
        g = np.zeros(2, np.int32)
        L.zq_guards(self._ptr(g))
        self.guards = dict(avail=int(g[0]), release=int(g[1]))

    @staticmethod
    def _ptr(a: np.ndarray):
        return a.ctypes.data_as(ctypes.c_void_p)

    def run(self, frames: np.ndarray, progress: bool | None = None, chunk: int = 32) -> np.ndarray:
        """uint8 frames N x H x W x C (or one H x W x C) -> int64 logits N x classes.
        ``progress``: tqdm bar (default: for 128 frames or more)."""
        frames = np.ascontiguousarray(check_frames(frames, self.input_shape, "the engine"))
        n = len(frames)
        out = np.zeros((n, self.num_classes), np.int32)
        bar = None
        if progress or (progress is None and n >= 128):
            from tqdm import tqdm
            bar = tqdm(total=n, unit="frame", desc="C sim", leave=False)
        try:
            for i in range(0, n, chunk):
                j = min(n, i + chunk)
                rc = self._lib.zq_run(self._ptr(frames[i:j]), j - i, self._ptr(out[i:j]), None)
                if rc == -4:
                    raise CSimError(self._failure())
                if rc != 0:
                    raise CSimError(f"zq_run returned {rc}: the output stream was not "
                                    f"{self.num_classes} beats with TLAST on the last")
                if bar is not None:
                    bar.update(j - i)
        finally:
            if bar is not None:
                bar.close()
        return out.astype(np.int64)

    def registers(self) -> dict:
        """The registers after the last frame (:data:`REG_NAMES`), plus the status decoded
        (``flags``, ``error_frames``, one boolean per status bit)."""
        regs = np.zeros(N_REGS, np.uint32)
        self._lib.zq_regs(self._ptr(regs))
        d = {k: int(v) for k, v in zip(REG_NAMES, regs)}
        st = E.decode_status(d["status"])
        d.update(flags=st["flags"], error_frames=st["error_frames"],
                 **{b.name: bool(d["status"] & b.mask) for b in E.STATUS_BITS})
        return d

    def send_raw(self, beats, last, max_out: int | None = None) -> np.ndarray:
        """Send raw 32-bit beats with TLAST flags; zq_top runs once per TLAST (one
        input frame each). Returns every output word (int64, sign-extended).
        ``max_out`` defaults to the most the beats can produce (one frame per TLAST,
        one more per whole frame of beats drained after a long frame)."""
        beats = np.ascontiguousarray(beats, dtype=np.uint32).ravel()
        last = np.ascontiguousarray(np.asarray(last).astype(np.uint8)).ravel()
        if beats.shape != last.shape:
            raise ValueError(f"{beats.size} beats but {last.size} TLAST flags")
        if max_out is None:
            in_beats = int(np.prod(self.input_shape)) // 4
            max_out = (int(np.count_nonzero(last)) + beats.size // in_beats + 1) * self.num_classes
        out = np.zeros(max(1, max_out), np.int32)
        n = self._lib.zq_send_raw(self._ptr(beats), self._ptr(last), beats.size, self._ptr(out), max_out)
        if n == -4:
            raise CSimError(self._failure())
        if n < 0:
            raise CSimError(f"zq_send_raw returned {n}")
        if n > max_out:
            raise CSimError(f"{n} output words, more than max_out={max_out}")
        return out[:n].astype(np.int64)

    def _failure(self) -> str:
        return "C simulation failed (" + self.mode + " mode): " + self._lib.zq_last_error().decode(errors="replace")

    # ---- the C-simulation scheduler ------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """The scheduler's mode for the following runs (:data:`MODES`)."""
        if mode not in MODES:
            raise ValueError(f"C simulation mode {mode!r}: one of {', '.join(MODES)}")
        self._lib.zq_set_mode(MODES.index(mode))

    @property
    def mode(self) -> str:
        return MODES[self._lib.zq_get_mode()]

    def set_hazard(self, hazard: str, delay: int = 0) -> None:
        """The pipeline-hazard mode of the core's loop for the following runs (:data:`HAZARDS`,
        ``hls/csim/zq_hazard.h``): ``late_stores`` lands every store to the activation, weight and GAP
        RAMs and every slot release ``delay`` iterations late; ``late_reads`` runs the datapath (its
        reads and all that follows) ``delay`` iterations behind the control; ``none`` (or delay 0)
        runs the C code as written. Kept per library file, like the mode."""
        if hazard not in HAZARDS:
            raise ValueError(f"hazard {hazard!r}: one of {', '.join(HAZARDS)}")
        if int(delay) < 0:
            raise ValueError(f"hazard delay {delay}: not negative")
        self._lib.zq_set_hazard(HAZARDS.index(hazard), int(delay))

    def hazard_sweep(self, frames: np.ndarray, want: np.ndarray, delays, hazards=("late_stores", "late_reads")) -> dict:
        """The frames under every hazard mode and delay (:meth:`set_hazard`), each run from a reset:
        ``{hazard: {delay: frames whose logits differ from want}}`` (-1: the run failed, a deadlock);
        the mode is ``none`` again afterwards."""
        out: dict = {}
        try:
            for hz in hazards:
                out[hz] = {}
                for d in delays:
                    self.set_hazard(hz, d)
                    self.reset()
                    try:
                        got = self.run(frames, progress=False)
                        out[hz][int(d)] = int(np.count_nonzero(~np.all(got == want, axis=1)))
                    except CSimError:
                        out[hz][int(d)] = -1
        finally:
            self.set_hazard("none")
            self.reset()
        return out

    def set_stream_depth(self, name: str | None, depth: int = 0) -> None:
        """Give the engine's stream ``name`` (``w_beats``, ``stem_units``, ``in_status``, ``logits``,
        ``fill_units``, ``out_units``) ``depth`` items instead of its declared depth (0: the declared
        one again); ``name=None`` restores every stream."""
        self._lib.zq_set_stream_depth(None if name is None else name.encode(), int(depth))

    def process_stats(self, clear: bool = True) -> dict:
        """The processes and streams of the runs since the last clear: ``{"processes": {name:
        dict(iterations, idle, stall_full, stall_empty, stall_join, start, end)}, "streams": {name:
        dict(depth, items, max_held)}}``. In lockstep mode ``iterations`` and the stalls are clock
        cycles (one loop iteration per cycle) and ``start``/``end`` the cycles of a process's first
        and last activity in its last run; in the other modes only the iterations mean anything."""
        n = self._lib.zq_csim_stats(None, 0, 0)
        buf = ctypes.create_string_buffer(n)
        self._lib.zq_csim_stats(buf, n, int(clear))
        procs, streams = {}, {}
        for line in buf.value.decode().splitlines():
            f = line.split()
            if f[0] == "process":
                procs[f[1]] = dict(zip(("iterations", "idle", "stall_full", "stall_empty", "stall_join", "start",
                                        "end"), map(int, f[2:])))
            elif f[0] == "stream":
                streams[f[1]] = dict(zip(("depth", "items", "max_held"), map(int, f[2:])))
        return dict(processes=procs, streams=streams)

    def loop_counts(self, clear: bool = True) -> dict:
        """What every process of the engine did since the last clear (a library built with
        ``count=True``): ``{"layers": [{counter: (count, entries)}, ...], "frame": {counter: (count,
        entries)}}`` with the counters of :data:`COUNTERS` (``hls/zq_count.h``: the loops' iterations
        and entries, the core's issues and waits, the lockstep cycles of each layer's region in
        ``span``). ``clear`` zeroes the counts afterwards."""
        n = self._lib.zq_loop_counts(None, 0, 0)
        if n < 0:
            raise CSimError(f"{self.lib_path} was built without loop counts (csim.build(..., count=True))")
        n_layers = int(self._lib.zq_n_layers())
        if n != (n_layers + 1) * len(COUNTERS) * 2:
            raise CSimError(f"{self.lib_path}: {n} loop counts, expected {(n_layers + 1) * len(COUNTERS) * 2} "
                            "(COUNTERS out of step with hls/zq_count.h's enum Counter)")
        buf = np.zeros(n, np.int64)
        self._lib.zq_loop_counts(self._ptr(buf), n, int(clear))
        rows = [{ph: (int(c[i, 0]), int(c[i, 1])) for i, ph in enumerate(COUNTERS)}
                for c in buf.reshape(n_layers + 1, len(COUNTERS), 2)]
        return dict(layers=rows[:-1], frame=rows[-1])

    def reset(self) -> None:
        """Clear the counters and the weight cache (as a hardware reset); DDR keeps its contents."""
        self._lib.zq_reset()

    # ---- the simulated DDR and the base-address registers ----------------------
    def ddr_write(self, addr: int, data) -> None:
        buf = np.frombuffer(bytes(data), np.uint8).copy()
        if self._lib.zq_ddr_write(addr, self._ptr(buf), buf.size) != 0:
            raise CSimError(f"DDR write of {buf.size} bytes at 0x{addr:x} is outside the simulated "
                            f"{self.ddr_bytes}-byte DDR")

    def ddr_read(self, addr: int, n: int) -> bytes:
        buf = np.zeros(n, np.uint8)
        if self._lib.zq_ddr_read(addr, self._ptr(buf), n) != 0:
            raise CSimError(f"DDR read of {n} bytes at 0x{addr:x} is outside the simulated {self.ddr_bytes}-byte DDR")
        return buf.tobytes()

    @property
    def bases(self) -> dict:
        b = np.zeros(2, np.uint64)
        self._lib.zq_get_bases(self._ptr(b))
        return dict(wts=int(b[0]), act=int(b[1]))

    def set_bases(self, wts: int | None = None, act: int | None = None) -> None:
        """Write the ``wts`` / ``act`` registers (byte addresses in the simulated DDR)."""
        cur = self.bases
        w, a = cur["wts"] if wts is None else wts, cur["act"] if act is None else act
        if self._lib.zq_set_bases(w, a) != 0:
            raise CSimError(f"bases wts=0x{w:x}, act=0x{a:x}: not 8-byte aligned, or the weight image "
                            f"({self.image_bytes} B) / scratch area ({self.scratch_bytes} B) would run past the "
                            f"simulated {self.ddr_bytes}-byte DDR")


def build_stream_test(out_dir) -> Path:
    """Compile ``hls/tb/tb_csim_deadlock.cpp`` (the C simulation's streams against UG1399's
    too-small FIFO; no export needed) into ``out_dir``."""
    cxx = compiler()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    srcs = [HLS_DIR / "tb" / "tb_csim_deadlock.cpp", *(HLS_DIR / s for s in CSIM_SOURCES)]
    out = out_dir / "tb_csim_deadlock"
    if _newer(out, srcs + [HLS_DIR / "csim" / "zq_csim.h"]):
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        _run_cmd([cxx, *CXXFLAGS, f"-I{HLS_DIR}", *map(str, srcs), "-o", str(tmp)])
        os.replace(tmp, out)
    return out


def run_stream_test(out_dir, mode: str, depth: int, items: int = 10) -> tuple[int, str]:
    """Run the stream test in ``mode`` with data_channel1 of ``depth`` slots: (exit status, output);
    3 is a deadlock the watchdog reported."""
    r = subprocess.run([str(build_stream_test(out_dir)), mode, str(depth), str(items)], capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr
