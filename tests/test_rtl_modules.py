"""Per-module cocotb testbenches of rtl/ (sim/rtl/tb/tb_<module>.py), in the manner of verilog-axis.

Each case is a real Verilator build of one module with one parameter set (cached under
build/sim/modules/ by zynqflow.sim.rtl.modules) and one simulator run of all the cocotb tests
of its testbench; it fails if any check fails (the message names the first failed checks and
the run directory). Every module with logic of its own runs over at least two parameter sets
by default; more sets are marked ``slow`` and run only when asked for (``-m slow``, or
``ZQ_MODULE_SWEEP=1``), so that ``make test`` stays within its budget. zq_core and zq_top are
covered by tests/test_rtl_zq_top.py.

    .venv/bin/python -m pytest tests/test_rtl_modules.py                 # default sets (~31 builds)
    .venv/bin/python -m pytest tests/test_rtl_modules.py -m slow         # the extra sets
    .venv/bin/python -m zynqflow.sim.rtl.modules zq_fifo DATA_W=8 DEPTH=4  # one build by hand
"""

from __future__ import annotations

import os

import pytest

from zynqflow.sim.rtl.modules import MODULE_SOURCES, ModuleBuild, params_tag
from zynqflow.sim.rtl.runner import RTL_DIR, RtlUnavailable
from zynqflow.spec import engine as E
from zynqflow.spec.paths import REPO

NET_ID = 0x5A17C0DE           # the weight DMA's compiled-in network ID (its testbench writes it into the header)
COVERED_ELSEWHERE = {"zq_core", "zq_top"}
ONE_SET = {"zq_lut_mul"}      # no parameters to vary: one exhaustive run


def _wdma(word_bytes: int, wr_w: int, n_words: int, cache: int) -> dict:
    return dict(WORD_BYTES=word_bytes, WR_W=wr_w, N_WORDS=n_words, HDR_BYTES=E.header_bytes(word_bytes),
                NET_ID=NET_ID, CACHE=cache)


def _stem(in_size, in_ch, k, s, in_words, n_ci, wpg, raw_rr, row_w=10) -> dict:
    return dict(IN_SIZE=in_size, IN_CH=in_ch, K=k, S=s, SIZE=in_size // s, IN_WORDS=in_words, N_CI=n_ci, WPG=wpg,
                ROW_W=row_w, RAW_RR=raw_rr)


# (module) -> parameter sets run by default (at least two each)
PARAMS: dict[str, list[dict]] = {
    "zq_ram_sdp":   [dict(DATA_W=64, DEPTH=512, OUT_REG=1), dict(DATA_W=18, DEPTH=24, OUT_REG=0)],
    "zq_fifo":      [dict(DATA_W=32, DEPTH=16), dict(DATA_W=8, DEPTH=4)],
    "zq_axi_rd":    [dict(DATA_W=64, MAX_OUT=8), dict(DATA_W=32, MAX_OUT=2)],
    "zq_axi_wr":    [dict(DATA_W=64, MAX_OUT=8, W_QUEUE=4), dict(DATA_W=32, MAX_OUT=2, W_QUEUE=2)],
    "zq_act_mem":   [dict(WPG=2, ROWS=1024, WORD_W=64), dict(WPG=4, ROWS=96, WORD_W=32)],
    # all DSP48E1; DSP pairs and LUT pairs side by side (10 of 16 pairs on DSP48E1)
    "zq_mac_array": [dict(N_PE=16, N_CI=8), dict(N_PE=8, N_CI=4, DSP_PAIRS=10)],
    "zq_lut_mul":   [dict()],
    "zq_requant":   [dict(N_PE=16, ACC_W=32, OUT_W=18), dict(N_PE=4, ACC_W=32, OUT_W=12)],
    "zq_loop_gen":  [dict(N_PE=16, WPG=2, ROW_W=12, WR_W=9), dict(N_PE=32, WPG=4, ROW_W=10, WR_W=6)],
    "zq_out_dma":   [dict(N_PE=16, DEPTH=E.RTL_OUT_FIFO_UNITS, MARGIN=E.RTL_OUT_FIFO_MARGIN, PIPE=E.RTL_PIPE_DEPTH,
                          MAX_OUT=8), dict(N_PE=32, DEPTH=32, MARGIN=12, PIPE=6, MAX_OUT=2)],
    "zq_fill_dma":  [dict(N_PE=16, ROW_W=12, MAX_OUT=8), dict(N_PE=8, ROW_W=10, MAX_OUT=2)],
    "zq_fill_paths": [dict(N_PE=16, ROW_W=12, PATHS=2, MAX_OUT=8), dict(N_PE=32, ROW_W=11, PATHS=2, MAX_OUT=2)],
    "zq_out_paths": [dict(N_PE=16, PATHS=2, MAX_OUT=8), dict(N_PE=32, PATHS=2, MAX_OUT=2)],
    # streamed through a ring smaller than the image; cached, 64-byte words in an odd number
    "zq_wdma":      [_wdma(128, 5, 45, 0), _wdma(64, 6, 41, 1)],
    # 1-channel 3x3/2 stem (zynqnet-mini); RGB 3x3/2 in 7 words of 4 lanes; 12-channel 1x1 copy, one bank
    "zq_stem":      [_stem(16, 1, 3, 2, 2, 8, 2, 8), _stem(16, 3, 3, 2, 7, 4, 4, 8), _stem(8, 12, 1, 1, 2, 8, 1, 2)],
    # rounding (GAP_ROUND, spec.engine.GAP_ROUNDINGS): ties away from zero, none (shift 0); floor and ties to even
    # in the slow sets; the engine tests: half_up (the default), half_even (the wide variant), floor (the Brevitas
    # zynqnet-mini of test_qonnx_import)
    "zq_gap":       [dict(N_PE=16, GAP_ROWS=1, GAP_SHIFT=4, GAP_ROUND=E.GAP_ROUND_HALF_AWAY, N_CLASSES=10),
                     dict(N_PE=8, GAP_ROWS=4, GAP_SHIFT=0, N_CLASSES=27)],
    "zq_axis_out":  [dict(N_CLASSES=10, ERR_VALUE=E.ERROR_LOGIT, LAT=2), dict(N_CLASSES=3, ERR_VALUE=E.ERROR_LOGIT, LAT=3)],
    # the register map's bits (zq_top's default) and the 64 KiB the Vivado IP's port decodes (board/ip/zq_top_ip.v)
    "zq_axil_regs": [dict(ADDR_W=E.reg_addr_bits("rtl")), dict(ADDR_W=E.CTRL_ADDR_BITS)],
}

# more parameter sets, `-m slow`
SLOW: dict[str, list[dict]] = {
    "zq_fifo":      [dict(DATA_W=5, DEPTH=2)],
    "zq_axi_rd":    [dict(DATA_W=128, MAX_OUT=4)],
    "zq_axi_wr":    [dict(DATA_W=64, MAX_OUT=4, W_QUEUE=8)],
    "zq_act_mem":   [dict(WPG=1, ROWS=64, WORD_W=128)],
    "zq_mac_array": [dict(N_PE=32, N_CI=8), dict(N_PE=16, N_CI=16), dict(N_PE=8, N_CI=4, DSP_PAIRS=0),
                     dict(N_PE=16, N_CI=8, DSP_PAIRS=40), dict(N_PE=32, N_CI=16, DSP_PAIRS=220)],
    "zq_requant":   [dict(N_PE=2, ACC_W=32, OUT_W=17)],
    "zq_loop_gen":  [dict(N_PE=8, WPG=1, ROW_W=11, WR_W=7)],
    "zq_out_dma":   [dict(N_PE=8, DEPTH=32, MARGIN=12, PIPE=6, MAX_OUT=4)],
    "zq_fill_dma":  [dict(N_PE=32, ROW_W=12, MAX_OUT=4)],
    "zq_fill_paths": [dict(N_PE=8, ROW_W=10, PATHS=1, MAX_OUT=4)],
    "zq_out_paths": [dict(N_PE=8, PATHS=1, MAX_OUT=4)],
    "zq_wdma":      [_wdma(256, 6, 30, 0), _wdma(128, 6, 50, 1)],
    "zq_stem":      [_stem(8, 3, 3, 1, 7, 4, 4, 4), _stem(32, 1, 3, 2, 2, 8, 2, 8, row_w=12)],
    "zq_gap":       [dict(N_PE=32, GAP_ROWS=2, GAP_SHIFT=6, GAP_ROUND=E.GAP_ROUND_FLOOR, N_CLASSES=64),
                     dict(N_PE=8, GAP_ROWS=2, GAP_SHIFT=2, GAP_ROUND=E.GAP_ROUND_HALF_EVEN, N_CLASSES=12)],
    "zq_axis_out":  [dict(N_CLASSES=1, ERR_VALUE=E.ERROR_LOGIT, LAT=2)],
}


def _cases():
    for module, sets in PARAMS.items():
        for p in sets:
            yield pytest.param(module, p, id=f"{module}-{params_tag(p)}", marks=pytest.mark.xdist_group(module))
    for module, sets in SLOW.items():
        for p in sets:
            yield pytest.param(module, p, id=f"{module}-{params_tag(p)}",
                               marks=[pytest.mark.slow, pytest.mark.xdist_group(module)])


def test_every_module_has_a_testbench():
    """Each rtl/ module with logic of its own: sources known, a testbench, two default parameter sets."""
    modules = {p.stem for p in RTL_DIR.glob("zq_*.sv")} - COVERED_ELSEWHERE
    assert modules == set(MODULE_SOURCES) - {"zq_maxi_echo"}, f"modules without a build entry / stale entries: " \
                                           f"{sorted(modules ^ (set(MODULE_SOURCES) - {'zq_maxi_echo'}))}"
    for m in sorted(modules):
        assert (REPO / "sim" / "rtl" / "tb" / f"tb_{m}.py").is_file(), f"no sim/rtl/tb/tb_{m}.py"
        assert len(PARAMS.get(m, [])) >= (1 if m in ONE_SET else 2), f"{m}: fewer than two default parameter sets"


def _sweep_requested(config) -> bool:
    expr = config.getoption("markexpr", "") or ""
    return os.environ.get("ZQ_MODULE_SWEEP", "0") not in ("", "0") or ("slow" in expr and "not slow" not in expr)


@pytest.mark.parametrize("module,params", list(_cases()))
def test_module(module, params, request):
    if request.node.get_closest_marker("slow") and not _sweep_requested(request.config):
        pytest.skip("extra parameter set: run with -m slow or ZQ_MODULE_SWEEP=1")
    try:
        build = ModuleBuild(module, params).build()
    except RtlUnavailable as e:
        pytest.skip(str(e))
    res = build.run()          # raises AssertionError with the failed checks
    assert res["_tests"] >= 2 or module in ("zq_gap",), f"{module}: only {res['_tests']} cocotb tests ran"
    assert res["checks"] and all(n > 0 for n in res["checks"].values()), f"{module}: tests without checks: {res}"
