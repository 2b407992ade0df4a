"""The hardware models the search calls: cycles per frame and resources of a
network on an N_PE x N_CI engine, for a target part.

Everything in :mod:`zynqflow.dse` reaches the models through
:func:`evaluate` (and the :data:`PARTS` table) only, so replacing them is one
edit of this file. The lead's final models (``zynqflow.spec.cycles``:
topology-only cycle model; ``zynqflow.export.plan``: topology-only buffer
planning and a resource model calibrated against Yosys) replace the
provisional ones below; the contract they have to meet is :func:`evaluate`'s.

Provisional model (:data:`MODEL`), stated everywhere it is used:

* cycles/frame = sum over conv layers of
  ``co_groups * out^2 * k^2 * ci_chunks + LAYER_OVERHEAD``
  (``co_groups = ceil(cout / N_PE)``, ``ci_chunks = ceil(cin / N_CI)``); an
  im2col'ed stem (a k x k first layer on fewer than N_CI input channels) runs
  as a 1x1 conv on ``k*k*C_in`` channels. fps = clock / cycles.
* DSP = N_PE * N_CI / 2 (two 8-bit MACs per DSP48), LUT = 45 * MACs + 9000,
  FF = 40 * MACs + 6000.
* BRAM36 = weight ring (double buffer of the largest per-output-group weight
  block, k^2 * ci_chunks words of N_PE x N_CI weights, streamed from DDR)
  + on-chip activations (the peak of simultaneously live tensors, in
  N_PE/N_CI banks of N_CI lanes) + the input buffer (the im2col'ed frame)
  + the frame store (one copy per lane). Memories under 4 Kbit are counted as
  LUT RAM (0 BRAM). Each memory takes the best RAMB36 aspect ratio.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from zynqflow.spec.topology import INPUT, NetConfig

MODEL = "provisional (dse/hw_model.py: MAC-array cycles + 30/layer; DSP=MACs/2, LUT/FF linear in MACs, " \
        "BRAM36 = weight ring + activations)"

LAYER_OVERHEAD = 30        # cycles a layer costs beyond its MAC-array cycles (provisional)
LUTRAM_BITS = 4096         # smaller memories are assumed to map to LUT RAM
# RAMB36 aspect ratios (depth, width) of the 7-series / UltraScale block RAM (512 x 72 in SDP mode)
_RAMB36 = ((32768, 1), (16384, 2), (8192, 4), (4096, 9), (2048, 18), (1024, 36), (512, 72))


@dataclass(frozen=True)
class Part:
    name: str
    board: str
    lut: int
    ff: int
    bram36: int
    dsp: int
    clock_mhz: float      # the engine clock the board design runs at

    def limits(self) -> dict[str, int]:
        return dict(dsp=self.dsp, bram36=self.bram36, lut=self.lut, ff=self.ff)


PARTS = {
    "xc7z020": Part("xc7z020", "PYNQ-Z2", lut=53200, ff=106400, bram36=140, dsp=220, clock_mhz=100.0),
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


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def bram36(depth: int, width: int) -> int:
    """RAMB36 blocks for one depth x width memory (0 when it fits LUT RAM)."""
    if depth <= 0 or width <= 0 or depth * width < LUTRAM_BITS:
        return 0
    return min(_ceil(width, w) * _ceil(depth, d) for d, w in _RAMB36)


def _layer_shape(cfg: NetConfig, l, n_ci: int, shapes: dict) -> tuple[int, int, int]:
    """(k, cin, out) of one layer as the engine runs it (the im2col'ed stem as 1x1)."""
    out = shapes[l.dst][0]
    if l.src == INPUT and l.k > 1 and cfg.in_channels < n_ci:
        return 1, l.k * l.k * l.cin, out
    return l.k, l.cin, out


def evaluate(cfg: NetConfig, n_pe: int, n_ci: int, part: str = "xc7z020", clock_mhz: float | None = None) -> dict:
    """Predicted cycles/frame, frames/s and resources of ``cfg`` on an
    ``n_pe`` x ``n_ci`` engine in ``part``.

    Returns ``cycles_per_frame`` (int), ``fps`` (at ``clock_mhz``, default the
    part's board clock), ``clock_mhz``, ``dsp``, ``bram36``, ``lut``, ``ff``
    (numbers, comparable with ``bench.synth_estimate``), ``model`` (a label
    saying which model produced them) and ``detail`` (free-form, for reports)."""
    p = get_part(part)
    clock = float(clock_mhz or p.clock_mhz)
    if n_pe < 1 or n_ci < 1:
        raise ValueError(f"engine N_PE={n_pe}, N_CI={n_ci}: both must be positive")
    shapes = cfg.tensor_shapes()
    cycles, ring_words = 0, 0
    for l in cfg.conv_layers:
        k, cin, out = _layer_shape(cfg, l, n_ci, shapes)
        chunks = _ceil(cin, n_ci)
        cycles += _ceil(l.cout, n_pe) * out * out * k * k * chunks + LAYER_OVERHEAD
        ring_words = max(ring_words, k * k * chunks)
    macs = n_pe * n_ci
    w_bits, a_bits = cfg.weight_bits, cfg.act_bits
    banks = max(1, n_pe // n_ci)

    def words(t: str) -> int:
        size, ch = shapes[t]
        return size * size * _ceil(ch, n_ci)

    # peak of simultaneously live activation tensors (input buffer counted apart)
    layers = cfg.conv_layers
    first_write, last_read = {}, {}
    for i, l in enumerate(layers):
        first_write.setdefault(l.dst, i)
        last_read[l.src] = i
    live_peak = 0
    for i in range(len(layers)):
        live = sum(words(t) for t, w in first_write.items()
                   if t != cfg.output_tensor and w <= i <= last_read.get(t, w))
        live_peak = max(live_peak, live)
    k0, cin0, out0 = _layer_shape(cfg, layers[0], n_ci, shapes)
    in_words = out0 * out0 * _ceil(cin0, n_ci) if k0 == 1 and layers[0].k > 1 else words(INPUT)
    in_bytes = cfg.input_size ** 2 * cfg.in_channels
    mem = dict(
        weight_ring=bram36(2 * ring_words, macs * w_bits),
        activations=banks * bram36(_ceil(live_peak, banks), n_ci * a_bits),
        input_buffer=banks * bram36(_ceil(in_words, banks), n_ci * a_bits),
        frame_store=n_ci * bram36(_ceil(in_bytes, 4), 32),
    )
    return dict(
        cycles_per_frame=int(cycles), fps=clock * 1e6 / cycles, clock_mhz=clock,
        dsp=_ceil(macs, 2), bram36=sum(mem.values()), lut=45 * macs + 9000, ff=40 * macs + 6000,
        model=MODEL, detail=dict(bram36=mem, weight_ring_words=2 * ring_words, live_activation_words=live_peak,
                                 mac_units=macs, part=asdict(p)),
    )


def violations(res: dict, part: str) -> dict[str, float]:
    """Per resource: used / available - 1 (feasible when every value is <= 0)."""
    lim = get_part(part).limits()
    return {k: res[k] / lim[k] - 1.0 for k in RESOURCES}
