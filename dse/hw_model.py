"""The hardware models the search calls: cycles per frame and resources of a
network on an N_PE x N_CI engine, for a target part.

Everything in :mod:`zynqflow.dse` reaches the models through :func:`evaluate`
(and the :data:`PARTS` table) only. They are the flow's own:

* the network is laid out for the engine by ``zynqflow.export.plan.plan_layout``
  (the exporter's planner, topology only: tensor placement on chip or in DDR,
  bands, rings, the weight ring or cache); a design it cannot lay out is
  infeasible (``plan_error``);
* cycles/frame: ``zynqflow.spec.cycles.predict`` (the event model of the RTL
  twin, DRAM time included, checked per layer against the RTL by the tests)
  under the part's board memory (``Part.memory``: the ``pynq-z2`` preset of the
  engine specification for the xc7z020: shared DDR budget, refresh; ``ideal``
  for the ZCU104, whose 64-bit DDR4 is ten times the engine's demand); at
  another clock the memory's latencies, refresh and bytes per cycle are scaled
  to the same nanoseconds and bytes per second (``spec.cycles.scale_memory``);
* resources: ``zynqflow.export.resources.estimate`` (DSP from the lane pairs packed
  into DSP48E1, the other lanes on LUT multipliers; block RAM from the plan's RAMs,
  LUT/FF fitted to Yosys runs of the RTL).

``engine`` picks the variant of the engine the search targets (``ENGINES``): ``rtl``, the
SystemVerilog twin (the models above), or ``hls``, the Vitis HLS engine (cycles from
``zynqflow.spec.cycles_hls.predict_hls``, its overlapped schedule; resources from the
``hls`` variant of ``export.resources``, whose memories its pragmas lay out).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from zynqflow.spec.topology import NetConfig

MODEL = "spec.cycles event model (DRAM time included; within 3 % of the RTL per layer) + export.resources " \
        "(DSP = lane pairs on DSP48E1, the rest LUT lanes; BRAM from the plan's RAMs, LUT/FF fitted to Yosys)"
MODEL_HLS = "spec.cycles_hls model of the HLS engine's overlapped schedule (Vitis depths estimated) + " \
            "export.resources hls variant (BRAM from the pragmas' memories; LUT/FF estimated)"
ENGINES = ("rtl", "hls")



@dataclass(frozen=True)
class Part:
    name: str
    board: str
    lut: int
    ff: int
    bram36: int
    dsp: int
    clock_mhz: float      # the engine clock the board design runs at
    memory: str = "ideal"   # the board's DDR: a preset of spec.engine.MEMORY_PRESETS (at 100 MHz)

    def limits(self) -> dict[str, int]:
        return dict(dsp=self.dsp, bram36=self.bram36, lut=self.lut, ff=self.ff)


PARTS = {
    "xc7z020": Part("xc7z020", "PYNQ-Z2", lut=53200, ff=106400, bram36=140, dsp=220, clock_mhz=100.0,
                    memory="pynq-z2"),
    "xczu7ev": Part("xczu7ev", "ZCU104", lut=230400, ff=460800, bram36=312, dsp=1728, clock_mhz=100.0),
}
ALIASES = {"pynq-z2": "xc7z020", "zcu104": "xczu7ev"}
RESOURCES = ("dsp", "bram36", "lut", "ff")
# clock targets the model can evaluate; the search samples one only when there is a choice
CLOCKS_MHZ: tuple[float, ...] = ()


def get_part(name: str) -> Part:
    key = ALIASES.get(name.lower(), name.lower())
    if key not in PARTS:
        raise ValueError(f"unknown target part '{name}' (known: {', '.join(list(PARTS) + list(ALIASES))})")
    return PARTS[key]


def engine_params(n_pe: int, n_ci: int, part: str = "xc7z020", engine: str = "rtl", act_paths: int = 2):
    """The EngineParams of an ``n_pe`` x ``n_ci`` engine in ``part``: the RTL twin packs as many lane
    pairs into DSP48E1 as the part has and puts the rest on exact LUT multipliers, with
    ``act_paths`` activation paths; the HLS engine (one path, every lane pair on a DSP48E1 until its
    port of issue 27's lanes) as hls/ builds it today."""
    from zynqflow.export.plan import EngineParams

    pairs = n_pe * n_ci // 2
    if engine == "hls":
        return EngineParams(n_pe, n_ci, dsp_pairs=pairs, act_paths=1)
    return EngineParams(n_pe, n_ci, dsp_pairs=min(pairs, get_part(part).dsp), act_paths=act_paths)


def evaluate(cfg: NetConfig, n_pe: int, n_ci: int, part: str = "xc7z020", clock_mhz: float | None = None,
             engine: str = "rtl", act_paths: int = 2) -> dict:
    """Predicted cycles/frame, frames/s and resources of ``cfg`` on an ``n_pe`` x ``n_ci`` engine
    in ``part``, for the engine variant ``engine`` (``rtl`` or ``hls``; :func:`engine_params`: the
    RTL twin's lanes beyond the part's DSP48E1 on LUT multipliers, ``act_paths`` activation paths).

    Returns ``cycles_per_frame`` (int, the frame period back to back), ``fps`` (at ``clock_mhz``,
    default the part's board clock), ``clock_mhz``, ``dsp``, ``bram36``, ``lut``, ``ff`` (numbers,
    comparable with ``bench.synth_estimate``), ``model`` (which models produced them) and
    ``detail`` (per-layer bounds, RAMs). A design the planner cannot lay out has ``plan_error``
    (and counts as infeasible in :func:`violations`)."""
    from zynqflow.export.plan import ExportError, plan_layout
    from zynqflow.export.resources import estimate
    from zynqflow.spec.cycles import predict, scale_memory
    from zynqflow.spec.cycles_hls import predict_hls

    if engine not in ENGINES:
        raise ValueError(f"engine variant {engine!r}: one of {', '.join(ENGINES)}")
    model = MODEL_HLS if engine == "hls" else MODEL
    p = get_part(part)
    clock = float(clock_mhz or p.clock_mhz)
    eng = engine_params(n_pe, n_ci, part, engine, act_paths)
    try:
        eng.check()
    except ExportError as e:
        raise ValueError(f"engine N_PE={n_pe}, N_CI={n_ci}: {e.reason}") from None
    try:
        plan = plan_layout(cfg, eng)
    except ExportError as e:
        return dict(cycles_per_frame=0, fps=0.0, clock_mhz=clock, dsp=eng.dsp48e1, bram36=0.0, lut=0, ff=0,
                    model=model, plan_error=str(e), detail=dict(mac_units=n_pe * n_ci, lut_lanes=eng.lut_lanes,
                                                                act_paths=eng.act_paths, part=asdict(p)))
    mem = scale_memory(p.memory, clock)
    pred = (predict_hls(plan, memory=mem, clock_mhz=clock) if engine == "hls"
            else predict(plan, memory=mem, clock_mhz=clock))
    res = estimate(plan, engine)
    fr = pred["frame"]
    bounds: dict[str, int] = {}
    for l in pred["layers"]:
        bounds[l["bound"]] = bounds.get(l["bound"], 0) + l["cycles"]
    return dict(
        cycles_per_frame=int(fr["period_cycles"]), fps=fr["fps"], clock_mhz=clock,
        dsp=res["dsp"], bram36=res["bram36"], lut=res["lut"], ff=res["ff"], model=model, engine=engine,
        detail=dict(utilization=fr["utilization"], cycles_by_bound=bounds, dram_bytes_per_frame=fr["dram_rd_bytes"] +
                    fr["dram_wr_bytes"], weight_cache=plan.weight_cache, ddr_tensors=plan.ddr_tensors,
                    rams=res["rams"], mac_units=n_pe * n_ci, lut_lanes=eng.lut_lanes, act_paths=plan.act_paths,
                    part=asdict(p), memory=p.memory),
    )


def violations(res: dict, part: str) -> dict[str, float]:
    """Per resource: used / available - 1 (feasible when every value is <= 0); ``plan`` 1.0 when
    the planner could not lay the network out."""
    lim = get_part(part).limits()
    out = {k: res[k] / lim[k] - 1.0 for k in RESOURCES}
    if res.get("plan_error"):
        out["plan"] = 1.0
    return out
