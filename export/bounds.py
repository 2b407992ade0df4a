"""What bounds each layer of a network on its default engine, under each memory preset.

    python -m zynqflow.export.bounds --net zynqnet [--n-pe 16 --n-ci 16] [--memory ideal,pynq-z2]
        [--out build/zynqnet/bounds.json]

The network is laid out by the exporter's planner (``plan_layout``: topology only, no weights)
and run through the cycle model of the RTL twin (``zynqflow.spec.cycles``) under each memory
preset of the specification (``spec.engine.MEMORY_PRESETS``). Printed as a table (``make
report`` runs it after the roofline report; ``make export`` prints the same table for the
exported plan) and written as JSON: per layer its modelled cycles and its bound (compute, ddr
read, ddr write, weights, input stream, ddr shared). A model, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zynqflow.spec import engine as E
from zynqflow.spec.cycles import BOUND_PRESETS, bound_table

from .plan import ExportError, engine_from_args, plan_layout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--net", required=True, help="network preset or JSON config")
    ap.add_argument("--n-pe", type=int, default=None)
    ap.add_argument("--n-ci", type=int, default=None)
    ap.add_argument("--memory", default=",".join(BOUND_PRESETS),
                    help=f"comma list of memory presets ({', '.join(E.MEMORY_PRESETS)})")
    ap.add_argument("--out", default=None, help="default build/<net>/bounds.json")
    a = ap.parse_args(argv)
    from zynqflow.spec.topology import get_config

    try:
        cfg = get_config(a.net)
        memories = [m.strip() for m in a.memory.split(",") if m.strip()]
        for m in memories:
            E.memory_preset(m)                       # an unknown name fails here, naming the presets
        engine = engine_from_args(cfg, a.n_pe, a.n_ci)
        plan = plan_layout(cfg, engine)
    except (ExportError, ValueError, OSError) as e:
        print(f"bounds: {e}", file=sys.stderr)
        return 2
    rows, text = bound_table(plan, memories)
    print(text)
    out = Path(a.out or f"build/{cfg.name}/bounds.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(network=cfg.name, engine=dict(n_pe=engine.n_pe, n_ci=engine.n_ci),
                                   memory_presets=memories, layers=rows,
                                   label="cycle model of the RTL twin (spec.cycles), not a measurement"),
                              indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
