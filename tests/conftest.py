"""Suite-wide pytest set-up.

``--cpu-durations=N`` lists the N tests that used the most CPU time (user + system, of the
test process and of the processes it waited for: compilers, simulators, pools), setup and
teardown included. Unlike ``--durations`` (wall time) it does not depend on the machine's
load, so it is the figure to compare when the machine is shared; works with ``-n``.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
from pathlib import Path

import pytest


_CPU_START = pytest.StashKey[float]()

def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="list the N tests that used the most CPU time (user+sys, with waited-for children); "
                          "0 lists all")


# (No compiler cache: the Verilator builds share their runtime objects and a precompiled header of
# Verilator's headers themselves (sim/rtl/runner.py, sim/harness/rtl_fast.py); on a cold build/,
# ccache cost about a tenth of each compile and found little to reuse.)


def _cpu_seconds() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[_CPU_START] = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown":
        start = item.stash.get(_CPU_START, None)
        if start is not None:
            outcome.get_result().user_properties.append(("cpu_s", _cpu_seconds() - start))


_CPU: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        for k, v in report.user_properties:
            if k == "cpu_s":
                _CPU[report.nodeid] = v


def pytest_terminal_summary(terminalreporter, config):
    n = config.getoption("--cpu-durations")
    if n is None or not _CPU:
        return
    tr = terminalreporter
    ranked = sorted(_CPU.items(), key=lambda kv: kv[1], reverse=True)
    tr.write_sep("=", f"CPU time of the {'' if n == 0 else str(n) + ' '}most expensive tests "
                      f"(user+sys with children; all {len(_CPU)} tests: {sum(_CPU.values()):.1f} s)")
    for nodeid, s in ranked[:n or None]:
        tr.write_line(f"{s:8.2f}s cpu  {nodeid}")


# ---- parallel runs (pytest-xdist: `make test` runs -n 2 --dist loadgroup) -----------------------------
# Tests marked @pytest.mark.xdist_group("name") run on one worker, one after another: give that mark to
# tests that share a build or an expensive fixture. Other tests are grouped by file. The groups start in
# order of their cold cost (CPU seconds, from --cpu-durations on a cold build/), the most expensive first,
# so that no long group starts last; a group not listed costs 0 and starts after the listed ones. The
# costs are make test's (without the tests marked slow, which make test-slow runs).
GROUP_COST: dict[str, float] = {
    "tests/test_hls_hazard.py": 60, "tests/test_rtl_fast.py": 65, "tests/test_dse.py": 121,
    "tests/test_hls_csim.py": 111, "rtl-ddr64": 85, "tests/test_timing.py": 3,
    "tests/test_harness_memory.py": 70, "tests/test_rtl_memory.py": 57, "rtl-ddr64-faults": 48,
    "tests/test_cycles_hls.py": 48, "tests/test_qonnx_import.py": 47, "tests/test_host_board.py": 45,
    "tests/test_host_rtl.py": 34, "tests/test_reference.py": 31, "tests/test_hls4ml_compare.py": 7,
    "tests/test_hangs.py": 29, "fast-zynqnet": 28, "rtl-reference": 26, "tests/test_folders.py": 24,
    "rtl-mini": 15, "tests/test_board_scripts.py": 13, "rtl-tiny": 13, "tests/test_notebook.py": 13,
    "tests/test_packaging.py": 12, "tests/test_host_bringup.py": 12, "tests/test_make_export.py": 12,
    "tests/test_layers.py": 12, "tests/test_runner.py": 11, "rtl-rgb": 10, "zq_stem": 9, "rtl-wide": 8,
    "zq_mac_array": 8, "tests/test_train_ddp.py": 8, "zq_fill_paths": 7, "zq_wdma": 6, "zq_lut_mul": 6,
    "tests/test_rtl_zq_top.py": 6, "zq_loop_gen": 6, "zq_out_dma": 5, "zq_axi_wr": 5,
    "tests/test_host_hls.py": 5, "tests/test_vl_cxx.py": 15, "zq_requant": 4, "zq_out_paths": 4,
    "zq_fill_dma": 4, "zq_gap": 4,
}


# The groups travel from the workers to the scheduler in a file: xdist 3.8 appends a test's group to
# its node id (``item._nodeid``), which pytest 9 no longer reads, so without this every test would
# be grouped by its file only.
_GROUPS_ENV = "ZQ_XDIST_GROUPS"


def _group(item) -> str:
    """The xdist work unit of a test: its xdist_group, else its file."""
    m = item.get_closest_marker("xdist_group")
    if m is not None:
        return str(m.args[0] if m.args else m.kwargs.get("name", "default"))
    return item.nodeid.split("::", 1)[0]


def pytest_configure(config):
    if config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):   # the xdist controller
        fd, path = tempfile.mkstemp(prefix="zq-xdist-groups-", suffix=".json")
        os.close(fd)
        os.environ[_GROUPS_ENV] = config._zq_groups = path   # the workers it starts inherit it


def pytest_unconfigure(config):
    path = getattr(config, "_zq_groups", None)
    if path:
        os.environ.pop(_GROUPS_ENV, None)
        Path(path).unlink(missing_ok=True)


@pytest.hookimpl(tryfirst=True, optionalhook=True)   # (an xdist hook: optional, pytest runs without xdist)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    groups: dict[str, str] = {}
    loaded = False

    class CostOrderedGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            nonlocal loaded
            if not loaded:   # called once the workers have collected (and written the file)
                text = Path(config._zq_groups).read_text()
                groups.update(json.loads(text) if text else {})
                loaded = True
            return groups.get(nodeid) or nodeid.split("::", 1)[0]

    config.option.loadscopereorder = False     # the order of the collection (by cost, below) instead
    return CostOrderedGroups(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if getattr(config.option, "loadgroup", False):    # an xdist worker of --dist loadgroup
        items.sort(key=lambda item: -GROUP_COST.get(_group(item), 0.0))
        path = os.environ.get(_GROUPS_ENV)
        if path:   # every worker writes the same map, each whole
            tmp = f"{path}.{os.getpid()}"
            Path(tmp).write_text(json.dumps({item.nodeid: _group(item) for item in items}))
            os.replace(tmp, path)
