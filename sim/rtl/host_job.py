"""The ``rtl`` backend from plain Python: the board driver on the simulated RTL.

:func:`run_job` builds (or reuses) the Verilator model of ``zq_top`` for an
export with :class:`zynqflow.sim.rtl.runner.SimBuild`, then runs the cocotb test
:mod:`zynqflow.sim.rtl.tb_host` in a simulator subprocess through
``cocotb_tools.runner``. Frames go in as ``.npy`` files, results come back as
``.npz`` + ``.json`` in a private run directory under the build
(``build/sim/<build>/runs/host-*``, removed afterwards unless ``keep``).
A :class:`~zynqflow.host.errors.HostError` raised by the driver inside the
simulation (network-ID mismatch, timeout, ...) is raised again here with the
same type and message.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from zynqflow.host import errors
from zynqflow.host.errors import BackendError, HostError
from zynqflow.host.manifest import Export

TB_MODULE = "zynqflow.sim.rtl.tb_host"
TESTCASE = "host_job"
CLOCK_HZ = 100e6


def _build(export: Export, rtl: str | None):
    try:
        from zynqflow.sim.rtl.runner import RtlUnavailable, SimBuild
    except ImportError as e:
        raise BackendError(f"the rtl backend needs zynqflow.sim (cocotb, cocotbext-axi, verilator): {e}") from e
    export.require("rtl")
    try:
        return SimBuild(export.dir, rtl).build()
    except RtlUnavailable as e:
        raise BackendError(f"rtl backend: {e}") from e
    except (OSError, ValueError, SystemExit) as e:
        raise BackendError(f"rtl backend: building the simulator for {export.dir} failed: {e}") from e


OPS = ("classify", "stream", "classify_async", "stream_async", "pl_reset", "reopen", "doctor")


def run_job(export: Export | str | Path, steps: list[tuple[str, np.ndarray]], *, rtl: str | None = None,
            backpressure: float = 0.0, seed: int = 1, timeout_s: float | None = None, keep: bool = False,
            verbose: bool = False, sim_limit_ms: float | None = None, driver_export=None,
            sim: dict | None = None, driver: dict | None = None, continue_on_error: bool = False) -> dict:
    """Run ``steps`` ([(op, uint8 frames N x H x W x C), ...], op: classify, stream,
    classify_async, stream_async; or ("pl_reset", None): ap_rst_n between two calls) through
    the driver on the RTL, in one simulation. Returns the summary dict with
    ``steps[i]['logits']``, ``['t_send']``, ``['t_done']`` (simulated seconds) added.

    ``sim``: shim options (DMA faults and tampering, interrupts, registers, DMA state, where
    buffers are allocated; see :mod:`zynqflow.sim.rtl.tb_host`); ``driver``: driver options
    (retries, recover, fclk_mhz, timing). ``driver_export``: the export whose manifest the driver uses, when it is not the
    one the RTL was built from (the network-ID check must then refuse it). A ``HostError``
    re-raised from the simulation carries the summary as ``.sim_summary``; with
    ``continue_on_error`` a step's error is recorded in ``steps[i]['error']`` instead and the
    next steps run."""
    export = export if isinstance(export, Export) else Export(export)
    for op, _ in steps:
        if op not in OPS:
            raise ValueError(f"unknown step '{op}' ({', '.join(OPS)})")
    build = _build(export, rtl)
    from cocotb_tools.runner import get_results, get_runner

    runs = build.build_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="host-", dir=runs))
    ok = False
    try:
        if build.kind == "hls":   # ROM images are read relative to the run directory
            for dat in build.hls_dir.glob("*.dat"):
                shutil.copy(dat, run_dir / dat.name)
        job_steps = []
        for i, (op, frames) in enumerate(steps):
            if op in ("pl_reset", "reopen", "doctor"):
                job_steps.append(dict(op=op))
                continue
            f = run_dir / f"frames{i}.npy"
            np.save(f, np.ascontiguousarray(frames, dtype=np.uint8))
            job_steps.append(dict(op=op, frames=str(f)))
        drv_export = Export(driver_export) if driver_export is not None else export
        job = dict(export=str(drv_export.dir), engine=build.kind, steps=job_steps, backpressure=backpressure, seed=seed,
                   timeout_s=timeout_s, result=str(run_dir / "result.json"), arrays=str(run_dir / "result.npz"),
                   build=build.build_dir.name, sim=sim or {}, driver=driver or {},
                   continue_on_error=continue_on_error)
        (run_dir / "job.json").write_text(json.dumps(job, indent=1))
        env = {"ZQ_HOST_JOB": str(run_dir / "job.json"), "PYTHONHASHSEED": "0"}
        if not sim_limit_ms:   # a generous bound on simulated time: 20 estimated frame times per frame
            n = sum(len(f) for op, f in steps if f is not None) + 1 + 4 * sum(op == "doctor" for op, _ in steps)
            mhz = (driver or {}).get("fclk_mhz") or CLOCK_HZ / 1e6
            sim_limit_ms = max(100.0, 20 * n * export.frame_cycles() / min(mhz * 1e6, CLOCK_HZ) * 1e3)
        env["ZQ_HOST_SIM_LIMIT_MS"] = f"{sim_limit_ms:.3f}"
        xml = run_dir / "results.xml"
        log = run_dir / "sim.log"
        pytest_var = os.environ.pop("PYTEST_CURRENT_TEST", None)   # the runner would treat us as a test
        t0 = time.perf_counter()
        try:
            get_runner("verilator").test(
                test_module=TB_MODULE, hdl_toplevel="zq_top", hdl_toplevel_lang="verilog", testcase=TESTCASE,
                build_dir=build.build_dir, test_dir=run_dir, extra_env=env, results_xml=str(xml), seed=seed,
                waves=build.waves, log_file=None if verbose else log)
        except SystemExit as e:
            raise BackendError(f"rtl backend: the simulator exited with {e.code}; log in {log}") from None
        finally:
            if pytest_var is not None:
                os.environ["PYTEST_CURRENT_TEST"] = pytest_var
        wall = time.perf_counter() - t0
        res_file = run_dir / "result.json"
        res = json.loads(res_file.read_text()) if res_file.exists() else {}
        err = res.get("error")
        if err:
            cls = getattr(errors, err["type"], None)
            if isinstance(cls, type) and issubclass(cls, HostError):
                e = cls.__new__(cls)
                HostError.__init__(e, err["message"])
                e.__dict__.update(err.get("attrs") or {})
                e.sim_summary = res
                ok = True
                raise e
            raise BackendError(f"rtl backend: the driver failed in the simulation: {err['type']}: "
                               f"{err['message']}\n{err.get('traceback', '')}(run directory {run_dir})")
        n, failed = get_results(xml) if xml.exists() else (0, 1)
        if n == 0 or failed or not res:
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise BackendError(f"rtl backend: simulation failed (see {run_dir}):\n{tail}")
        arr = np.load(run_dir / "result.npz")
        for i, s in enumerate(res["steps"]):
            s["logits"] = arr[f"logits{i}"]
            s["t_send"] = arr[f"t_send{i}"]
            s["t_done"] = arr[f"t_done{i}"]
        res["process_wall_seconds"] = wall
        res["build_dir"] = str(build.build_dir)
        res["kind"] = build.kind
        ok = True
        return res
    finally:
        if ok and not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
