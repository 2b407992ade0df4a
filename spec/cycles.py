"""The cycle model of the engine (interim: MAC-array cycles plus the RTL twin's
per-layer and per-block overheads; the DRAM model follows)."""

from __future__ import annotations

from .engine import RTL_TIMING


def predict(plan) -> dict:
    layers = []
    for l in plan.layers:
        c = l.mac_cycles + RTL_TIMING.mac_pipeline + RTL_TIMING.layer_setup + l.n_bands * l.co_groups
        layers.append(dict(name=l.name, cycles=c, mac_cycles=l.mac_cycles))
    total = sum(x["cycles"] for x in layers)
    return dict(layers=layers, frame=dict(cycles=total))
