"""Per-layer workload characterization and roofline of a network.

For every convolution of a :class:`~zynqflow.spec.topology.NetConfig` this
reports the output slice it writes, its parameters (BatchNorm folded, so
every conv has ``cout`` biases), its multiply-accumulates
(``H_out * W_out * K * K * Cin * Cout``), the bytes it moves and its
arithmetic intensity (MACs per byte):

* weight bytes: weights at ``cfg.weight_bits`` plus biases at 32 bits;
* activation bytes: the whole input tensor read (the input image at 8 bits,
  everything else at ``cfg.act_bits``) plus the output slice written (at
  ``cfg.act_bits``, or ``cfg.out_bits`` for the final conv's logits).

Traffic is counted per layer, each tensor moved once per layer: the two
expand convs of a fire module each count a read of the squeeze output, and
no layer is assumed to keep its input on chip for the next one. The final
global average pool has no parameters and no MACs; it is shown in the table
but not counted in any total.

The roofline compares each layer with the target boards below. Their
numbers are *theoretical peaks*: compute = DSP slices x PL clock at one MAC
per DSP per cycle (no DSP packing of two 8-bit MACs), bandwidth = DDR bus
width x transfer rate with no refresh, protocol or AXI overhead. A real
engine reaches a fraction of either. A layer's attainable rate on a board is
``min(peak, intensity * bandwidth)``.

Usage::

    python -m zynqflow.model.report --net zynqnet-mini [--out build/zynqnet-mini]

prints the table and writes ``report.json`` and ``roofline.png`` into the
output directory (default ``build/<net>``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from zynqflow.spec.numerics import BIAS_BITS
from zynqflow.spec.topology import INPUT, NetConfig, get_config

INPUT_BITS = 8  # the input image is uint8 pixels


@dataclass(frozen=True)
class Target:
    """A target board, described by its theoretical peaks (see module docstring)."""

    name: str
    part: str
    dsp: int
    clock_mhz: float
    ddr: str  # memory type, for labels
    ddr_bus_bits: int
    ddr_mts: float  # mega-transfers per second

    @property
    def peak_gmacs(self) -> float:
        """Compute peak in GMAC/s: one MAC per DSP slice per clock cycle."""
        return self.dsp * self.clock_mhz / 1e3

    @property
    def ddr_gbytes_s(self) -> float:
        """DDR peak in GB/s (10^9 bytes): bus width x transfer rate."""
        return self.ddr_bus_bits / 8 * self.ddr_mts / 1e3

    @property
    def ridge(self) -> float:
        """Arithmetic intensity (MAC/byte) where the roofline turns flat."""
        return self.peak_gmacs / self.ddr_gbytes_s

    def attainable(self, intensity: float) -> float:
        """Roofline bound in GMAC/s for a layer of the given intensity."""
        return min(self.peak_gmacs, intensity * self.ddr_gbytes_s)


PYNQ_Z2 = Target("PYNQ-Z2", "xc7z020", dsp=220, clock_mhz=100.0,
                 ddr="DDR3", ddr_bus_bits=16, ddr_mts=1066.0)   # 2.132 GB/s
ZCU104 = Target("ZCU104", "xczu7ev", dsp=1728, clock_mhz=200.0,
                ddr="DDR4", ddr_bus_bits=64, ddr_mts=2400.0)    # 19.2 GB/s
TARGETS: tuple[Target, ...] = (PYNQ_Z2, ZCU104)


def _bytes(elements: int, bits: int) -> int:
    """Bytes needed for ``elements`` values of ``bits`` each, packed."""
    return (elements * bits + 7) // 8


# ---------------------------------------------------------------------------
def characterize(cfg: NetConfig, targets: tuple[Target, ...] = TARGETS) -> dict:
    """The content of ``report.json`` for ``cfg``; pure, no I/O."""
    shapes = cfg.tensor_shapes()
    out_tensor = cfg.output_tensor
    layers = []
    for l in cfg.conv_layers:
        in_size, in_ch = shapes[l.src]
        out_size = shapes[l.dst][0]
        weights = l.k * l.k * l.cin * l.cout
        params = weights + l.cout
        macs = out_size * out_size * weights
        weight_bytes = _bytes(weights, cfg.weight_bits) + _bytes(l.cout, BIAS_BITS)
        in_bits = INPUT_BITS if l.src == INPUT else cfg.act_bits
        out_bits = cfg.out_bits if l.dst == out_tensor else cfg.act_bits
        act_bytes = (_bytes(in_size * in_size * in_ch, in_bits)
                     + _bytes(out_size * out_size * l.cout, out_bits))
        layers.append(dict(
            name=l.name, src=l.src, dst=l.dst, k=l.k, stride=l.stride, cin=l.cin, cout=l.cout,
            in_size=in_size, out_size=out_size, out_shape=[out_size, out_size, l.cout],
            params=params, macs=macs, weight_bytes=weight_bytes, act_bytes=act_bytes,
            intensity=macs / (weight_bytes + act_bytes),
        ))
    params = sum(l["params"] for l in layers)
    macs = sum(l["macs"] for l in layers)
    weight_bytes = sum(l["weight_bytes"] for l in layers)
    act_bytes = sum(l["act_bytes"] for l in layers)
    gap_size, gap_ch = shapes[out_tensor]
    return dict(
        net=cfg.name,
        input=[cfg.input_size, cfg.input_size, cfg.in_channels],
        act_bits=cfg.act_bits, weight_bits=cfg.weight_bits, out_bits=cfg.out_bits,
        params=params, macs=macs, weight_bytes=weight_bytes, act_bytes=act_bytes,
        intensity=macs / (weight_bytes + act_bytes),
        layers=layers,
        gap=dict(name="gap", src=out_tensor, in_shape=[gap_size, gap_size, gap_ch],
                 out_shape=[1, 1, gap_ch], params=0, macs=0),
        targets=[_roofline(t, layers) for t in targets],
    )


def _roofline(t: Target, layers: list[dict]) -> dict:
    rows = []
    for l in layers:
        att = t.attainable(l["intensity"])
        rows.append(dict(name=l["name"], intensity=l["intensity"], attainable_gmacs=att,
                         bound="compute" if l["intensity"] >= t.ridge else "memory"))
    # Lower bound on one frame's conv time if every layer ran at its roofline.
    seconds = sum(l["macs"] / (r["attainable_gmacs"] * 1e9) for l, r in zip(layers, rows))
    return dict(name=t.name, part=t.part, dsp=t.dsp, clock_mhz=t.clock_mhz,
                ddr=f"{t.ddr} {t.ddr_bus_bits}-bit {t.ddr_mts:g} MT/s",
                peak_gmacs=t.peak_gmacs, ddr_gbytes_s=t.ddr_gbytes_s, ridge_intensity=t.ridge,
                min_latency_ms=seconds * 1e3, layers=rows)


# ---------------------------------------------------------------------------
def _shape(s: list[int]) -> str:
    return "x".join(str(v) for v in s)


def format_table(report: dict) -> str:
    """The per-layer table, a totals row and the roofline summary, as text."""
    head = ("layer", "op", "output", "params", "MACs", "weight B", "act B", "MAC/B")
    rows = [(l["name"], f"{l['k']}x{l['k']} s{l['stride']}", _shape(l["out_shape"]),
             f"{l['params']:,}", f"{l['macs']:,}", f"{l['weight_bytes']:,}",
             f"{l['act_bytes']:,}", f"{l['intensity']:.2f}") for l in report["layers"]]
    g = report["gap"]
    rows.append((g["name"], "avg", _shape(g["out_shape"]), "0", "0", "-", "-", "-"))
    total = ("total", "", "", f"{report['params']:,}", f"{report['macs']:,}",
             f"{report['weight_bytes']:,}", f"{report['act_bytes']:,}", f"{report['intensity']:.2f}")
    widths = [max(len(r[i]) for r in [head, total, *rows]) for i in range(len(head))]

    def line(r: tuple[str, ...]) -> str:
        cells = [r[i].ljust(widths[i]) if i < 3 else r[i].rjust(widths[i]) for i in range(len(r))]
        return "  ".join(cells).rstrip()

    rule = "-" * len(line(head))
    inp = _shape(report["input"])
    out = [f"{report['net']}: input {inp}, weights {report['weight_bits']}-bit, "
           f"activations {report['act_bits']}-bit, logits {report['out_bits']}-bit",
           line(head), rule, *map(line, rows), rule, line(total),
           f"gap: global average pool {_shape(g['in_shape'])} -> {_shape(g['out_shape'])}, "
           "no parameters or MACs, not in the totals",
           "", "roofline (theoretical peaks: 1 MAC/DSP/cycle, raw DDR bandwidth):"]
    for t in report["targets"]:
        mem = sum(r["bound"] == "memory" for r in t["layers"])
        out.append(f"  {t['name']} ({t['part']}): {t['dsp']} DSP @ {t['clock_mhz']:g} MHz = "
                   f"{t['peak_gmacs']:g} GMAC/s, {t['ddr']} = {t['ddr_gbytes_s']:g} GB/s, "
                   f"ridge {t['ridge_intensity']:.2f} MAC/B; {mem}/{len(t['layers'])} layers "
                   f"memory-bound; >= {t['min_latency_ms']:.3g} ms/frame (roofline bound)")
    return "\n".join(out)


# ---------------------------------------------------------------------------
def _group_points(rows: list[dict], xs: list[float], ys: list[float]) -> dict:
    """Layer names by plotted point, so coincident layers share one label."""
    groups: dict[tuple[float, float], list[str]] = {}
    for r, x, y in zip(rows, xs, ys):
        groups.setdefault((round(x, 6), round(y, 6)), []).append(r["name"])
    return groups


def _minor_label(v: float, _pos: object = None) -> str:
    """Label the 2x and 5x minor ticks of a log axis, leave the rest blank."""
    mantissa = v / 10 ** math.floor(math.log10(v))
    return f"{v:g}" if round(mantissa) in (2, 5) and abs(mantissa - round(mantissa)) < 1e-6 else ""


def plot_roofline(report: dict, path: Path) -> None:
    """Log-log roofline, one subplot per target, each layer at its attainable rate."""
    from matplotlib.figure import Figure  # Agg canvas; no pyplot, no display
    from matplotlib.ticker import FuncFormatter, NullFormatter

    targets = report["targets"]
    xs = [l["intensity"] for l in report["layers"]]
    lo = min(xs + [t["ridge_intensity"] for t in targets]) / 2
    hi = max(xs + [t["ridge_intensity"] for t in targets]) * 2
    fig = Figure(figsize=(6.5 * len(targets), 5.5), layout="constrained")
    axes = fig.subplots(1, len(targets), squeeze=False)[0]
    for ax, t in zip(axes, targets):
        peak, bw = t["peak_gmacs"], t["ddr_gbytes_s"]
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        ax.plot(grid, [min(peak, x * bw) for x in grid], color="black", lw=2, label="roofline")
        ax.axhline(peak, color="tab:red", ls="--", lw=1,
                   label=f"compute peak {peak:g} GMAC/s ({t['dsp']} DSP x {t['clock_mhz']:g} MHz)")
        ax.plot(grid, [x * bw for x in grid], color="tab:blue", ls="--", lw=1,
                label=f"DDR {bw:g} GB/s ({t['ddr']})")
        ax.axvline(t["ridge_intensity"], color="gray", ls=":", lw=1,
                   label=f"ridge {t['ridge_intensity']:.2f} MAC/B")
        ys = [r["attainable_gmacs"] for r in t["layers"]]
        ax.scatter(xs, ys, s=18, color="tab:green", zorder=3, label="layers (attainable)")
        prev_x, level = 0.0, 0
        for (x, y), names in sorted(_group_points(t["layers"], xs, ys).items()):
            level = (level + 1) % 3 if x < prev_x * 1.1 else 0  # stagger crowded labels
            prev_x = x
            ax.annotate(", ".join(names), (x, y), xytext=(0, -5 - 48 * level), textcoords="offset points",
                        fontsize=6, rotation=90, ha="center", va="top",
                        arrowprops=dict(arrowstyle="-", lw=0.3, color="gray") if level else None)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(min(ys + [peak]) / 30, peak * 3)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(_minor_label))
        ax.set_xlabel("arithmetic intensity (MAC / byte)")
        ax.set_ylabel("GMAC/s")
        ax.set_title(f"{t['name']} ({t['part']})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(loc="lower right", fontsize=7)
    fig.suptitle(f"{report['net']}: per-layer roofline (theoretical peaks)")
    fig.savefig(path, dpi=120)


def write_report(cfg: NetConfig, out_dir: str | Path, plot: bool = True) -> dict:
    """Characterize ``cfg``, write ``report.json`` (and ``roofline.png``) into ``out_dir``."""
    report = characterize(cfg)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    if plot:
        plot_roofline(report, out / "roofline.png")
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--net", default="zynqnet-mini", help="preset name or JSON config file")
    p.add_argument("--in-channels", type=int, default=None,
                   help="input channels (default: the preset's)")
    p.add_argument("--out", default=None, help="output directory (default: build/<net>)")
    p.add_argument("--no-plot", dest="plot", action="store_false", help="skip roofline.png")
    a = p.parse_args(argv)
    try:
        cfg = get_config(a.net, in_channels=a.in_channels)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = Path(a.out) if a.out else Path("build") / cfg.name
    try:
        report = write_report(cfg, out, plot=a.plot)
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_table(report))
    print(f"\nwrote {out / 'report.json'}" + (f" and {out / 'roofline.png'}" if a.plot else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
