"""Suite-wide pytest set-up.

``--cpu-durations=N`` lists the N tests that used the most CPU time (user + system, of the
test process and of the processes it waited for: compilers, simulators, pools), setup and
teardown included. Unlike ``--durations`` (wall time) it does not depend on the machine's
load, so it is the figure to compare when the machine is shared; works with ``-n``.
"""

from __future__ import annotations

import os
import resource
import shutil

import pytest

from zynqflow.spec.paths import BUILD

_CPU_START = pytest.StashKey[float]()

def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="list the N tests that used the most CPU time (user+sys, with waited-for children); "
                          "0 lists all")


def pytest_configure(config):
    # Verilator's makefiles compile through $OBJCACHE: with ccache, what several builds share (the
    # runtime of the fast harness builds, identical designs) is compiled once. The cache lives in
    # build/ccache (cleared with build/), unless OBJCACHE or CCACHE_DIR say otherwise.
    if "OBJCACHE" not in os.environ and shutil.which("ccache"):
        os.environ["OBJCACHE"] = "ccache"
        os.environ.setdefault("CCACHE_DIR", str(BUILD / "ccache"))


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
# so that no long group starts last; a group not listed costs 0 and starts after the listed ones.
GROUP_COST: dict[str, float] = {
    "rtl-ddr64": 180, "tests/test_dse.py": 145, "tests/test_hls_csim.py": 110, "tests/test_rtl_fast.py": 110,
    "tests/test_harness_memory.py": 90, "tests/test_qonnx_import.py": 75, "rtl-ddr64-faults": 70,
    "tests/test_reference.py": 60, "tests/test_rtl_memory.py": 60, "rtl-tiny": 60, "tests/test_host_board.py": 55,
    "rtl-mini": 50, "tests/test_host_rtl.py": 50, "tests/test_cycles_hls.py": 45, "fast-zynqnet": 45,
    "rtl-reference": 45, "rtl-wide": 35, "tests/test_hls4ml_compare.py": 33, "rtl-rgb": 30,
    "tests/test_folders.py": 30, "tests/test_train_ddp.py": 25, "tests/test_train.py": 25,
    "tests/test_rtl_zq_top.py": 20, "tests/test_layers.py": 15, "tests/test_notebook.py": 12,
    "zq_mac_array": 13, "zq_stem": 12, "zq_wdma": 10, "tests/test_host_bringup.py": 10, "tests/test_packaging.py": 10,
}


def _scope(nodeid: str) -> str:
    """The xdist work unit of a test: its xdist_group (appended to the node id by xdist), else its file."""
    return nodeid.rsplit("@", 1)[1] if "@" in nodeid else nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True, optionalhook=True)   # (an xdist hook: optional, pytest runs without xdist)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class CostOrderedGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    config.option.loadscopereorder = False     # the order of the collection (by cost, below) instead
    return CostOrderedGroups(config, log)


@pytest.hookimpl(trylast=True)   # after xdist has put the groups into the node ids
def pytest_collection_modifyitems(config, items):
    if getattr(config.option, "loadgroup", False):    # an xdist worker of --dist loadgroup
        items.sort(key=lambda item: -GROUP_COST.get(_scope(item.nodeid), 0.0))
