"""The resource model of the engine: DSP48E1, block RAM, LUTs and flip-flops of a
hardware plan, without running a synthesis tool (the co-design search calls it
for every candidate; ``make synth-estimate`` runs Yosys for the real count).

Two variants of the engine (``ENGINES``): ``rtl``, the SystemVerilog twin (rtl/, what
Yosys counts below), and ``hls``, the Vitis HLS engine (hls/), whose memories are laid
out by its pragmas (:func:`hls_rams`) and which no synthesis here calibrates.

* **DSP48E1**: one per lane pair packed into a DSP (``EngineParams.dsp48e1``: two 8-bit
  weights share one multiplier, see rtl/zq_mac_array.sv); the other lanes are exact LUT
  multipliers (rtl/zq_lut_mul.sv) and cost LUTs and flip-flops instead.
* **Block RAM**: every RAM of the RTL (activation banks, the weight ring or
  cache, the stem's raw input rows, the GAP sums) from the plan's sizes, each
  mapped the way Yosys's ``memory_libmap`` maps it for xc7 (the cheapest
  arrangement of RAMB18E1 (0.5 RAMB36) or RAMB36E1 primitives in simple dual
  port mode, widths up to 36 / 72 bits); RAMs of at most ``LUTRAM_DEPTH`` words
  go to LUT RAM.
* **LUTs and flip-flops**: a linear model in the engine's parameters, fitted to
  Yosys ``synth_xilinx`` runs of this RTL (:data:`CALIBRATION`); the MAC array
  (per lane: the split of a packed product, adder-tree share, accumulator share)
  dominates; a LUT lane and the second activation path add what Yosys counted for
  them alone (:data:`LUT_LANE`, :data:`PATH2`). Its error against those runs is in
  ``CALIBRATION`` and checked by the tests.
* **The block design** around the engine (board/pynq_z2.tcl: the masters' protocol converters,
  the DMA and its SmartConnect, the interrupt controller, the control interconnect):
  :func:`block_design`, an estimate
  with its sources, so that the LUT fill of the part can be judged (``make synth-estimate``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zynqflow.spec import engine as E

MODEL = "resource model (export/resources.py): DSP = lane pairs on DSP48E1, BRAM from the plan's RAMs, " \
        "LUT/FF linear fit to Yosys synth_xilinx runs (+ LUT lanes, second activation path)"

LUTRAM_DEPTH = 64          # RAMs this shallow go to LUT RAM (RAM64M / RAM32M)
# (depth, width, RAMB36 equivalents) of the SDP arrangements: RAMB18E1 then RAMB36E1
_BRAM_SHAPES = ((16384, 1, 0.5), (8192, 2, 0.5), (4096, 4, 0.5), (2048, 9, 0.5), (1024, 18, 0.5), (512, 36, 0.5),
                (32768, 1, 1.0), (16384, 2, 1.0), (8192, 4, 1.0), (4096, 9, 1.0), (2048, 18, 1.0), (1024, 36, 1.0),
                (512, 72, 1.0))


@dataclass(frozen=True)
class Ram:
    name: str
    depth: int
    width: int
    copies: int = 1

    @property
    def bits(self) -> int:
        return self.depth * self.width * self.copies

    @property
    def bram36(self) -> float:
        if self.depth <= LUTRAM_DEPTH:
            return 0.0
        best = min(math.ceil(self.width / w) * math.ceil(self.depth / d) * c for d, w, c in _BRAM_SHAPES)
        return best * self.copies

    @property
    def lutram_luts(self) -> int:
        """LUTs of a LUT-RAM mapping (RAM64M: 3 bits x 64 words per 4 LUTs; RAM32M: 6 bits x 32)."""
        if self.depth > LUTRAM_DEPTH:
            return 0
        per = (6, 32) if self.depth <= 32 else (3, 64)
        return 4 * math.ceil(self.width / per[0]) * math.ceil(self.depth / per[1]) * self.copies


ENGINES = ("rtl", "hls")


def rams(plan, engine: str = "rtl") -> list[Ram]:
    """Every RAM of the RTL twin for ``plan`` (zq_top and its modules), or of the HLS engine
    (``engine="hls"``: :func:`hls_rams`)."""
    if engine == "hls":
        return hls_rams(plan)
    if engine != "rtl":
        raise ValueError(f"engine {engine!r}: one of {', '.join(ENGINES)}")
    e = plan.engine
    st = plan.stem
    paths = plan.act_paths           # a zq_out_dma per activation path (zq_out_paths)
    return [
        Ram("activation RAM (zq_act_mem)", plan.act_rows, e.n_ci * 8, e.wpg),
        Ram("weight ring / cache (zq_top u_wbuf)", plan.wbuf_depth, e.n_pe * e.n_ci * 8),
        Ram("stem raw rows (zq_stem)", st["in_size"], st["in_ch"] * 8, st["raw_rows"]),
        Ram("GAP sums (zq_gap)", plan.gap["rows"], e.n_pe * 32),
        Ram("output unit FIFO (zq_out_dma, per path)", 64, e.n_pe * 8, paths),
        Ram("output burst commands (zq_out_dma, per path)", 64, 37, paths),
        Ram("layer counters (zq_top)", max(2, plan.n_layers), 32, 2),
    ]


# The HLS engine's m_axi adapters buffer num_*_outstanding x max_*_burst_length beats per direction
# (UG1399, "Controlling AXI4 Burst Behavior": a FIFO of that size inside the adapter).
MAXI_BUFFER_BEATS = 8 * 16


def hls_rams(plan) -> list[Ram]:
    """Every memory of the HLS engine (hls/) for ``plan``, as its pragmas lay them out: the
    activation RAM (WPG banks of N_CI bytes, ``ram_s2p`` BRAM), the weight RAM (partitioned into
    BPW banks of 64-bit beats, one BRAM column each: a 64-bit bank uses 64 of a RAMB36's 72 bits
    where the RTL twin packs a whole word into 72-bit columns), the stem's raw rows (RAW_RR banks,
    a pixel per word) and row buffer (pixels of more than one unit), the GAP sums (N_PE banks, LUT
    RAM), the m_axi adapters' buffers (read: wts and act; write: act; with two activation paths
    also act2's reads and wts's writes, hls/zq_ddr.h). The FIFOs between the
    processes are shift registers (``BIND_STORAGE impl=srl``): LUTs, no BRAM. Mapped like the RTL's
    (the cheapest RAMB18/RAMB36 arrangement, LUT RAM at most LUTRAM_DEPTH words deep), which is
    what Vivado does with Vitis's RAMs; not checked against a Vitis run (none here)."""
    e, st = plan.engine, plan.stem
    bpw = e.n_pe * e.n_ci // 8
    units = -(-st["in_words"] // e.wpg)
    out = [
        Ram("activation RAM act_ram (hls/zq_core.h, WPG banks)", plan.act_rows, e.n_ci * 8, e.wpg),
        Ram("weight RAM wbuf (hls/zq_core.h, BPW banks of 64-bit beats)", plan.wbuf_depth, 64, bpw),
        Ram("stem raw rows raw (hls/zq_stem.h, RAW_RR banks)", st["in_size"], st["in_ch"] * 8, st["raw_rows"]),
        Ram("GAP sums gap (hls/zq_core.h, N_PE banks)", plan.gap["rows"], 32, e.n_pe),
        Ram("m_axi wts read buffer", MAXI_BUFFER_BEATS, 64),
        Ram("m_axi act read buffer", MAXI_BUFFER_BEATS, 64),
        Ram("m_axi act write buffer (data and strobes)", MAXI_BUFFER_BEATS, 72),
    ]
    if plan.act_paths == 2:     # path 2: m_axi act2 reads, m_axi wts writes
        out += [Ram("m_axi act2 read buffer", MAXI_BUFFER_BEATS, 64),
                Ram("m_axi wts write buffer (data and strobes)", MAXI_BUFFER_BEATS, 72)]
    if units > 1:
        out.append(Ram("stem row buffer srow (hls/zq_stem.h)", st["size"], e.n_ci * 8, st["in_words"]))
    return out


# The FIFOs of the HLS engine's dataflow (hls/zq_types.h depths; SRLs: a SRLC32E per bit and 32 slots).
def hls_fifo_luts(plan) -> int:
    e = plan.engine
    fifos = ((64, 64), (32, 8 * e.n_pe), (32, 8 * e.n_pe), (64, 8 * e.n_pe), (16, 32), (2, 24))
    if plan.act_paths == 2:     # path 2's fill units and result units
        fifos += ((32, 8 * e.n_pe), (64, 8 * e.n_pe))
    return sum(w * math.ceil(d / 32) for d, w in fifos)


# Yosys 0.23 ``synth_xilinx -family xc7`` of rtl/ (make synth-estimate) on these random-weight
# exports (export.fixtures.random_export(net, n_pe=, n_ci=, input_size=)): what Yosys counted.
# LUT/FF below are the least-squares fit of :func:`fit` to them; tests/test_resources.py refits,
# checks every point and the BRAM model against the same runs.
def _searched(name: str, stem: int, fires: tuple[tuple[int, int, bool], ...]) -> dict:
    """A 32x32 Fashion-MNIST network of the co-design search: (squeeze, expand, downsample) per fire."""
    return dict(name=name, input_size=32, in_channels=1, num_classes=10, stem=stem, head_splits=1,
                fires=[dict(squeeze=q, expand1=e, expand3=e, downsample=d) for q, e, d in fires])


CALIBRATION: dict[str, dict] = {
    "zynqnet-random0-pe16ci16": dict(net="zynqnet", input_size=None, n_pe=16, n_ci=16,
                                     lut=19157, ff=24092, bram36=100.0, dsp=128, pre27=True),
    # these two re-synthesized on the RTL with the bias stages (make synth-estimate's Yosys, same exports)
    "zynqnet-mini-random0-pe16ci8": dict(net="zynqnet-mini", input_size=None, n_pe=16, n_ci=8,
                                         lut=13431, ff=19623, bram36=49.0, dsp=64, bias_stages=True),
    "zynqnet-mini-random0-pe8ci8": dict(net="zynqnet-mini", input_size=None, n_pe=8, n_ci=8,
                                        lut=8547, ff=10956, bram36=48.0, dsp=32, bias_stages=True),
    "zynqnet-128-random0-pe32ci8": dict(net="zynqnet", input_size=128, n_pe=32, n_ci=8,
                                        lut=25871, ff=28752, bram36=133.0, dsp=128, pre27=True),
    # hardware in the loop of the Fashion-MNIST study (docs/dse.md): trained proxy weights
    "dse-t29-pe32ci8": dict(net=_searched("dse-t29", 32, ((16, 16, False), (32, 32, True), (64, 128, True),
                                                          (64, 64, True))),
                            input_size=None, n_pe=32, n_ci=8, lut=22489, ff=27224, bram36=61.0, dsp=128,
                            pre27=True),
    "dse-t30-pe32ci8": dict(net=_searched("dse-t30", 32, ((32, 32, True), (32, 32, True), (64, 64, True))),
                            input_size=None, n_pe=32, n_ci=8, lut=22342, ff=27054, bram36=61.0, dsp=128,
                            pre27=True),
    "dse-t33-pe32ci8": dict(net=_searched("dse-t33", 32, ((32, 16, True), (8, 16, True), (64, 16, True))),
                            input_size=None, n_pe=32, n_ci=8, lut=22330, ff=27083, bram36=32.5, dsp=128,
                            pre27=True),
    # issue 27's default engine of the full ZynqNet (make synth-estimate NET=zynqnet): 512 lanes, 220 DSP48E1
    # pairs and 72 LUT lanes, both activation paths, 192 KiB of activation RAM
    "zynqnet-random0-pe32ci16-lut72": dict(net="zynqnet", input_size=None, n_pe=32, n_ci=16, act_kb=192,
                                           act_paths=2, lut=36303, ff=54674, bram36=106.0, dsp=220, dsp_pairs=220,
                                           bias_stages=True),
}
# What a LUT lane and the second activation path add, each counted by Yosys 0.23 synth_xilinx on the
# modules alone (the rest of the engine unchanged): zq_mac_array 16 x 8 with DSP_PAIRS 64 (3 648 LUT +
# 409 LUT RAM/SRL, 4 519 FF) against DSP_PAIRS 28 (72 lanes on zq_lut_mul: 7 413 + 517, 8 399 FF), so a
# LUT lane costs its multiplier less the packed DSP's split in fabric; zq_fill_paths and zq_out_paths
# (N_PE 32) with PATHS 2 against PATHS 1: a second zq_fill_dma, port B's multiplexer and row count
# (+930 LUT, +822 FF), a second zq_out_dma and its routing (+317 LUT, +185 FF; its FIFOs' LUT RAM is
# in rams()).
LUT_LANE = dict(lut=53.8, ff=53.9)
# The points marked pre27 were synthesized before issue 27 moved the packed DSP's split into its
# post-adder and the adder tree and narrowed the products to 16 bits; zq_mac_array 16 x 8, all
# DSP48E1, before and after: 4 851 and 3 648 LUT, 4 799 and 4 519 FF. The fit takes them as measured
# less that saving per DSP lane.
SPLIT_SAVING = dict(lut=(4851 - 3648) / 128, ff=(4799 - 4519) / 128)
PATH2 = dict(lut=1247.0, ff=1007.0)
# The points without bias_stages were synthesized while zq_mac_array queued its bias words in a LUT-RAM
# FIFO (8 x N_PE*32 bits, RAM32M); it now carries them in BIAS_STAGES flip-flop stages of N_PE*32 bits.
# The full ZynqNet's engine (N_PE 32) before and after: 37 511 and 36 303 LUT (684 of the difference the
# FIFO's LUT RAM, the rest its pointers and read path), 47 514 and 54 674 FF. The fit takes the older
# points as measured less that logic and plus those flip-flops, per PE.
BIAS_STAGES = E.RTL_PIPE_MAC - 1   # bq1..bq7 of rtl/zq_mac_array.sv: its stages before the accumulators
BIAS_FIFO_LOGIC = dict(lut=(37511 - 36303 - 684) / 32)
# lut = a0 + a1 * lanes + a2 * n_pe + a3 * n_ci (+ the LUT RAM of the small RAMs, + LUT lanes, + path 2); ff likewise
LUT_COEF = (4405.05, 40.19, 123.06, 0.0)
FF_COEF = (3916.92, 61.39, 454.44, 0.0)


def _linear(coef, e) -> float:
    return coef[0] + coef[1] * e.n_pe * e.n_ci + coef[2] * e.n_pe + coef[3] * e.n_ci


def _extra(plan) -> tuple[float, float]:
    """LUTs and flip-flops beyond the fit's DSP-only, one-path engine: the LUT lanes and the
    second activation path (logic; its FIFOs are in :func:`rams`)."""
    e = plan.engine
    paths = plan.act_paths - 1
    return (LUT_LANE["lut"] * e.lut_lanes + PATH2["lut"] * paths,
            LUT_LANE["ff"] * e.lut_lanes + PATH2["ff"] * paths)


def calibration_plan(point: dict):
    """The hardware plan of a :data:`CALIBRATION` point (the export Yosys synthesized)."""
    from zynqflow.export.plan import EngineParams, plan_layout
    from zynqflow.spec.topology import NetConfig, get_config

    net = point["net"]
    cfg = NetConfig.from_dict(net) if isinstance(net, dict) else get_config(net, input_size=point["input_size"])
    d = EngineParams()
    return plan_layout(cfg, EngineParams(point["n_pe"], point["n_ci"], act_kb=point.get("act_kb", d.act_kb),
                                         dsp_pairs=point.get("dsp_pairs"), act_paths=point.get("act_paths", 1)))


def calibration_target(point: dict) -> tuple[float, float]:
    """The LUTs and flip-flops a calibration point stands for with this RTL: as Yosys counted them, less
    the split's saving for the points synthesized before it (``pre27``), and with the bias stages in
    place of the bias FIFO for the points synthesized before them (no ``bias_stages``)."""
    lut, ff = float(point["lut"]), float(point["ff"])
    if not point.get("bias_stages"):
        bias_lutram = Ram("bias FIFO", 8, point["n_pe"] * 32).lutram_luts
        lut -= bias_lutram + BIAS_FIFO_LOGIC["lut"] * point["n_pe"]
        ff += BIAS_STAGES * point["n_pe"] * 32
    if point.get("pre27"):
        dsp_lanes = 2 * point["dsp"]
        lut, ff = lut - SPLIT_SAVING["lut"] * dsp_lanes, ff - SPLIT_SAVING["ff"] * dsp_lanes
    return lut, ff


def fit(calibration: dict[str, dict] = CALIBRATION) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Least-squares LUT and FF coefficients (a0, a1 per lane, a2 per PE, a3 = 0) over the
    calibration runs; the LUT target excludes the LUT RAM that :func:`estimate` adds itself."""
    import numpy as np

    rows, lut, ff = [], [], []
    for point in calibration.values():
        plan = calibration_plan(point)
        lutram = sum(r.lutram_luts for r in rams(plan))
        x_lut, x_ff = _extra(plan)
        t_lut, t_ff = calibration_target(point)
        rows.append((1.0, point["n_pe"] * point["n_ci"], point["n_pe"]))
        lut.append(t_lut - lutram - x_lut)
        ff.append(t_ff - x_ff)
    a = np.array(rows)
    lut_c = np.linalg.lstsq(a, np.array(lut, float), rcond=None)[0]
    ff_c = np.linalg.lstsq(a, np.array(ff, float), rcond=None)[0]
    return (tuple(round(float(v), 2) for v in lut_c) + (0.0,),
            tuple(round(float(v), 2) for v in ff_c) + (0.0,))


# ---- the block design around the engine (board/pynq_z2.tcl) ---------------------------------------
# LUTs of the IPs the block design adds, for the xc7z020's fill: an estimate (Vivado is not run here),
# each with where its figure comes from. The SmartConnect figure is a Vivado measurement of a one-master,
# one-slave SmartConnect in front of a Zynq-7000 HP port (analogdevicesinc/hdl pull request #1054,
# Vivado 2023.1, coraz7s: 910 LUTs, 904 registers, against none for an AXI Interconnect there). The
# engine's masters go through AXI protocol converters in TRANSLATION_MODE 0 instead (PG059: no burst
# splitting for masters whose bursts never exceed 16 beats): what is left of the converter's
# axi3_conv with C_SUPPORT_SPLITTING = 0 is the registered AW and AR commands and a 32-deep LUT FIFO
# of write IDs and lengths for WID and the W count; its figure is our budget from that logic, as are
# the others from the IPs' configurations: not measurements (PG021, PG059 and PG099 publish
# per-configuration resource tables that were not at hand).
SMARTCONNECT_1X1 = dict(lut=910, ff=904, source="Vivado 2023.1, Zynq-7000 HP port, one endpoint "
                                                "(analogdevicesinc/hdl PR #1054)")
PROTOCOL_CONVERTER = dict(lut=200, ff=250, source="budget: axi_protocol_converter 2.1 AXI4 -> AXI3, "
                                                  "TRANSLATION_MODE 0 (PG059), from its logic without splitting")
BLOCK_DESIGN_BUDGET = (
    # (cell, LUT, FF, source)
    ("mem_sc (SmartConnect 2:1, the DMA's two masters -> HP1)", 2 * 910, 2 * 904,
     "budget: twice the measured 1:1 SmartConnect (analogdevicesinc/hdl PR #1054)"),
    ("axi_dma_0 (simple mode, 32-bit MM2S and S2MM, 23-bit lengths)", 2000, 2500,
     "budget (PG021 configuration without scatter-gather or realignment)"),
    ("ctrl_ic (AXI Interconnect 1:3, GP0 AXI3 -> AXI4-Lite)", 600, 700,
     "budget (PG059: a protocol converter to AXI4-Lite and a shared-access crossbar)"),
    ("axi_intc_0, irq_concat, rst_fclk0", 250, 300, "budget (PG099 with 3 inputs; proc_sys_reset)"),
)


def block_design(plan) -> dict:
    """What board/pynq_z2.tcl adds around the RTL twin in LUTs and flip-flops (an estimate, item by
    item with its source): one protocol converter per engine master (m_axi_wts, m_axi_act, and
    m_axi_act2 when the engine has two activation paths), the DMA's SmartConnect, the DMA, the
    control interconnect, the interrupt controller and the reset."""
    masters = 2 + (1 if plan.act_paths == 2 else 0)
    items = [dict(cell=f"{p}_pc (AXI protocol converter AXI4 -> AXI3 -> HP)", lut=PROTOCOL_CONVERTER["lut"],
                  ff=PROTOCOL_CONVERTER["ff"], source=PROTOCOL_CONVERTER["source"])
             for p in ("wts", "act", "act2")[:masters]]
    items += [dict(cell=c, lut=l, ff=f, source=src) for c, l, f, src in BLOCK_DESIGN_BUDGET]
    return dict(lut=sum(i["lut"] for i in items), ff=sum(i["ff"] for i in items), items=items,
                label="estimate of the block design's IPs (not a Vivado result)")


# The HLS engine's logic beyond the RTL twin's (an estimate: no Vitis run calibrates it): the
# m_axi adapters (three channels with their address generators, ~1 500 LUT and 2 000 FF each),
# the AXI4-Lite adapter, the dataflow regions' handshakes and Vitis's pipeline registers (15 %).
HLS_EXTRA = dict(lut_fixed=5000, ff_fixed=6500, overhead=0.15)
HLS_MODEL = ("resource model of the HLS engine (export/resources.py): DSP = the DSP lane pairs, BRAM from the "
             "pragmas' memories, LUT/FF = the RTL twin's fit + m_axi/AXI-Lite adapters + 15 % (estimate; "
             "no Vitis run calibrates it)")


def estimate(plan, engine: str = "rtl") -> dict:
    """dsp, bram36, lut, ff (numbers comparable with bench.synth_estimate) and the RAMs behind them, of
    the RTL twin or (``engine="hls"``) of the HLS engine."""
    e = plan.engine
    rs = rams(plan, engine)
    lutram = sum(r.lutram_luts for r in rs)
    lut, ff = _linear(LUT_COEF, e), _linear(FF_COEF, e)
    if engine == "rtl":
        x_lut, x_ff = _extra(plan)
        lut, ff = lut + x_lut, ff + x_ff
    if engine == "hls":         # (its LUT lanes bound to fabric, hls/zq_mac.h: the RTL's per-lane cost)
        lut = (lut + LUT_LANE["lut"] * e.lut_lanes) * (1 + HLS_EXTRA["overhead"]) + HLS_EXTRA["lut_fixed"] + \
            hls_fifo_luts(plan)
        ff = (ff + LUT_LANE["ff"] * e.lut_lanes) * (1 + HLS_EXTRA["overhead"]) + HLS_EXTRA["ff_fixed"]
    return dict(
        dsp=e.dsp48e1,
        lut_lanes=e.lut_lanes,
        bram36=sum(r.bram36 for r in rs),
        lut=int(round(lut + lutram)),
        ff=int(round(ff)),
        engine=engine,
        model=HLS_MODEL if engine == "hls" else MODEL,
        rams=[dict(name=r.name, depth=r.depth, width=r.width, copies=r.copies, bram36=r.bram36,
                   lutram_luts=r.lutram_luts) for r in rs],
    )
