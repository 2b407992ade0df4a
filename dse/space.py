"""The design space: a ZynqNet-style network family and the engine.

One trial samples, define-by-run (Optuna), in this order:

* the engine: ``engine`` = ``"<N_PE>x<N_CI>"`` from the pairs the space
  allows (powers of two, N_PE even and a multiple of N_CI, N_CI >= 4) whose
  network-independent resources fit the target part (evaluated with the
  hardware model on the smallest network of the space, so an engine that
  cannot fit with any network is never sampled); lanes beyond two per DSP48E1
  of the part are exact LUT multipliers (``hw_model.engine_params``), so an
  engine bigger than the part's DSP48E1 is in the space while its LUTs fit;
  ``act_paths`` (one or two activation paths to the DDR tensors); ``clock_mhz``
  when the hardware model offers several clock targets;
* the stem width ``stem`` (3x3 stride-2 conv: 32x32 -> 16x16);
* the number of fire modules ``n_fires`` and, per fire ``i``: ``f<i>_down``
  (a stride-2 3x3 squeeze; only offered while the map is larger than
  ``min_map``), ``f<i>_squeeze`` and ``f<i>_expand`` (e1 = e3 = expand,
  ZynqNet's and SqueezeNet's 50 % 3x3 share), powers of two;
* the final conv ``head_splits``: the 1x1 classifier conv in one piece or
  split into concatenated parts (ZynqNet's c10); a part must start at a
  multiple of N_PE (the engine writes the pooled sums in whole channel
  groups), so with 10 classes the default space keeps the head whole.

Every choice is valid by construction: kernels 1/3, strides 1/2, power-of-two
maps, concatenations at multiples of N_CI (expand widths are never below the
largest N_CI), so every sampled network passes ``check_rules`` and the
exporter's alignment checks; :func:`sample` still runs the checker.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from zynqflow.spec.topology import FireSpec, NetConfig, check_rules, fire_net

from . import hw_model


@dataclass(frozen=True)
class Space:
    name: str = "default"
    input_size: int = 32
    num_classes: int = 10
    stems: tuple[int, ...] = (16, 32, 64)
    fires: tuple[int, int] = (2, 6)                 # min, max number of fire modules
    squeezes: tuple[int, ...] = (8, 16, 32, 64)
    expands: tuple[int, ...] = (16, 32, 64, 128)    # e1 = e3
    head_splits: tuple[int, ...] = (1,)
    n_pe: tuple[int, ...] = (8, 16, 32, 64, 128)
    n_ci: tuple[int, ...] = (4, 8, 16)
    min_map: int = 2                                # no downsampling below this map size
    engines: tuple[str, ...] = field(default=())    # restrict to these "PExCI" engines (empty: all)
    act_paths: tuple[int, ...] = (1, 2)             # activation paths to the DDR tensors

    def check(self) -> None:
        """Raise ValueError naming the field that makes the space unusable."""
        def pow2(v: int) -> bool:
            return v > 0 and v & (v - 1) == 0

        for f in ("stems", "squeezes", "expands", "n_pe", "n_ci"):
            vals = getattr(self, f)
            if not vals or not all(pow2(v) for v in vals):
                raise ValueError(f"space '{self.name}': {f}={vals} must be non-empty powers of two")
            if f in ("stems", "squeezes", "expands") and len(vals) != len(_log2_range(vals)):
                raise ValueError(f"space '{self.name}': {f}={vals} must be consecutive powers of two")
        if not pow2(self.input_size) or self.input_size < 4:
            raise ValueError(f"space '{self.name}': input_size={self.input_size} must be a power of two >= 4")
        if min(self.n_ci) < 4:
            raise ValueError(f"space '{self.name}': n_ci={self.n_ci}: N_CI must be at least 4")
        if min(self.expands) < max(self.n_ci):
            raise ValueError(f"space '{self.name}': expands={self.expands}: the smallest expand width must be "
                             f">= the largest N_CI ({max(self.n_ci)}) so concatenations stay word-aligned")
        lo, hi = self.fires
        if not 1 <= lo <= hi:
            raise ValueError(f"space '{self.name}': fires={self.fires} must be (min, max) with 1 <= min <= max")
        if any(self.num_classes % s for s in self.head_splits):
            raise ValueError(f"space '{self.name}': head_splits={self.head_splits} must divide "
                             f"num_classes={self.num_classes}")
        bad = [s for s in self.head_splits if s > 1 and (self.num_classes // s) % max(self.n_pe)]
        if bad:
            raise ValueError(f"space '{self.name}': head_splits={bad}: parts of {self.num_classes} classes must "
                             f"be multiples of N_PE (up to {max(self.n_pe)}): the engine writes whole groups")
        for e in self.engines:
            pe, ci = parse_engine(e)
            if pe not in self.n_pe or ci not in self.n_ci:
                raise ValueError(f"space '{self.name}': engine {e} is outside n_pe={self.n_pe}, n_ci={self.n_ci}")

    def engine_pairs(self) -> list[tuple[int, int]]:
        """The (N_PE, N_CI) pairs of the space the engine can be built with (export.plan.EngineParams)."""
        from zynqflow.export.plan import EngineParams, ExportError

        def buildable(pe: int, ci: int) -> bool:
            try:
                EngineParams(pe, ci).check()
                return True
            except ExportError:
                return False

        pairs = [(pe, ci) for pe in self.n_pe for ci in self.n_ci if buildable(pe, ci)]
        if self.engines:
            pairs = [p for p in pairs if f"{p[0]}x{p[1]}" in self.engines]
        return pairs

    def smallest(self, in_channels: int) -> NetConfig:
        """The network with the fewest resources in the space (every fire downsampling as early as allowed)."""
        fires, size = [], self.input_size // 2
        for _ in range(self.fires[0]):
            down = size > self.min_map
            size //= 2 if down else 1
            fires.append(FireSpec(min(self.squeezes), min(self.expands), min(self.expands), downsample=down))
        return fire_net("smallest", self.input_size, in_channels, self.num_classes, stem=min(self.stems),
                        fires=fires, head_splits=min(self.head_splits))

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "Space":
        return Space(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


SPACES = {
    "default": Space(),
    # a few-second-per-trial space for tests and smoke runs (tiny networks, small engines)
    "small": Space(name="small", stems=(8, 16), fires=(1, 2), squeezes=(8,), expands=(8, 16),
                   n_pe=(8, 16), n_ci=(4, 8)),
}


def get_space(name: str, engines: tuple[str, ...] = ()) -> Space:
    if name not in SPACES:
        raise ValueError(f"unknown search space '{name}' (known: {', '.join(SPACES)})")
    sp = replace(SPACES[name], engines=tuple(engines))
    sp.check()
    return sp


def parse_engine(s: str) -> tuple[int, int]:
    """``"16x8"`` -> (16, 8)."""
    try:
        pe, ci = (int(v) for v in str(s).lower().split("x"))
    except ValueError:
        raise ValueError(f"engine '{s}': expected <N_PE>x<N_CI>, e.g. 16x8") from None
    return pe, ci


def feasible_engines(space: Space, part: str, in_channels: int, engine: str = "rtl") -> list[str]:
    """Engines whose resources fit ``part`` with the smallest network of the space (for the engine
    variant ``engine``: rtl or hls)."""
    small = space.smallest(in_channels)
    ok = [f"{pe}x{ci}" for pe, ci in space.engine_pairs()
          if max(hw_model.violations(hw_model.evaluate(small, pe, ci, part, engine=engine, act_paths=1),
                                     part).values()) <= 0]
    if not ok:
        raise ValueError(f"no engine of space '{space.name}' ({space.engine_pairs()}) fits {part}")
    return ok


@dataclass(frozen=True)
class Design:
    """One point of the space: a network and the engine it runs on."""

    cfg: NetConfig
    net: dict            # the compact JSON form (stem/fires/head_splits) that get_config reads
    n_pe: int
    n_ci: int
    clock_mhz: float | None
    act_paths: int = 2


def n_params(cfg: NetConfig) -> int:
    """Weights and biases of the deployed (BatchNorm-folded) network."""
    return sum(l.cout * l.cin * l.k * l.k + l.cout for l in cfg.conv_layers)


def _log2_range(vals: tuple[int, ...]) -> range:
    """log2 of the smallest .. largest value (the sampled integer range)."""
    return range(int(math.log2(min(vals))), int(math.log2(max(vals))) + 1)


def sample(trial, space: Space, part: str, in_channels: int, name: str,
           class_names: tuple[str, ...] = (), engine: str = "rtl") -> Design:
    """Sample (or, with an ``optuna.trial.FixedTrial`` of recorded params,
    rebuild) one design. Widths are sampled as log2 integers so TPE sees an
    ordered scale. ``engine``: the engine variant whose resources must fit."""
    engines = feasible_engines(space, part, in_channels, engine)
    n_pe, n_ci = parse_engine(trial.suggest_categorical("engine", engines))
    clock = trial.suggest_categorical("clock_mhz", list(hw_model.CLOCKS_MHZ)) if len(hw_model.CLOCKS_MHZ) > 1 \
        else None
    paths = tuple(space.act_paths) if engine == "rtl" else (1,)
    recorded = trial.params if type(trial).__name__ == "FixedTrial" else None
    if recorded is not None and "act_paths" not in recorded:
        act_paths = 1                                 # a trial recorded before the second path
    else:
        act_paths = int(trial.suggest_categorical("act_paths", list(paths))) if len(paths) > 1 else paths[0]

    def pow2(param: str, vals: tuple[int, ...]) -> int:
        r = _log2_range(vals)
        return 1 << (trial.suggest_int(param, r[0], r[-1]) if len(r) > 1 else r[0])

    stem = pow2("stem_log2", space.stems)
    n_fires = trial.suggest_int("n_fires", *space.fires) if space.fires[0] < space.fires[1] else space.fires[0]
    fires, size = [], space.input_size // 2
    for i in range(1, n_fires + 1):
        down = bool(trial.suggest_categorical(f"f{i}_down", [False, True])) if size > space.min_map else False
        size //= 2 if down else 1
        sq = pow2(f"f{i}_squeeze_log2", space.squeezes)
        ex = pow2(f"f{i}_expand_log2", space.expands)
        fires.append(dict(squeeze=sq, expand1=ex, expand3=ex, downsample=down))
    splits = trial.suggest_categorical("head_splits", list(space.head_splits)) if len(space.head_splits) > 1 \
        else space.head_splits[0]
    net = dict(name=name, input_size=space.input_size, in_channels=in_channels, num_classes=space.num_classes,
               stem=stem, fires=fires, head_splits=splits)
    if class_names:
        net["class_names"] = list(class_names)
    cfg = NetConfig.from_dict(net)
    check_rules(cfg)
    return Design(cfg, net, n_pe, n_ci, clock, act_paths)
