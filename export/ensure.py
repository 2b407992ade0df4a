"""The export the Makefile's targets use (``make csim``, ``rtl-bench``, ``rtl-sim``, ``bench``, ...):
the one the user made, re-made only when what it was made from changed.

    python -m zynqflow.export.ensure --net NET --out build/NET/export --dset TAG
        [--ckpt CKPT] [--candidate build/NET/TAG/checkpoint.pt ...] [--random SEED] [--seed SEED]
        [--data-given] [--args-given] [--force] [-- EXPORTER ARGS]

Every export carries ``export_inputs.json`` (:func:`zynqflow.export.exporter.export_inputs`: the
checkpoint's path, size and mtime, or the network and seed of random weights; the exporter's
arguments; a hash of the exporter's code). The source of the export this command makes sure of:

1. ``--ckpt`` (``CKPT=`` on make's command line), or ``--random`` (``WEIGHTS=random``): what the
   user names now;
2. else, unless ``--force`` (``make export``), the existing export's own source, when there is one
   and ``DATA`` was not named on the command line or names the export's dataset: ``make export
   CKPT=mine.pt`` then ``make rtl-bench`` runs ``mine.pt``'s weights;
3. else the first ``--candidate`` that exists (your trained checkpoint, then the committed reference).
   None: a network with a dataset (``DATA`` named, or a preset with class names) is refused, naming
   the checkpoint it would use; one without (the full ``zynqnet``: no ImageNet here) gets seeded
   random weights, said so.

It exports when there is no export, when ``--force``, or when the inputs differ from the export's
``export_inputs.json`` (the checkpoint was retrained, the arguments or the exporter's code changed),
saying why; otherwise it says which export is used and what it was made from. Exit status 2 when it
refuses or the export fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .exporter import EXPORT_INPUTS, export_args, export_inputs, exporter_parser
from .exporter import main as export_main


def _say(msg: str) -> None:
    print(f"export: {msg}", flush=True)


def _refuse(msg: str) -> int:
    print(f"export: {msg}; nothing was exported", file=sys.stderr)
    return 2


def _read_json(p: Path) -> dict | None:
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _has_dataset(net: str, data_given: bool) -> bool:
    """The network is trained on data here: DATA was named, or its config names its classes."""
    if data_given:
        return True
    from zynqflow.spec.topology import get_config

    try:
        return bool(get_config(net).class_names)
    except ValueError:
        return True                    # an unreadable config: the exporter will say why


def _what(inp: dict) -> str:
    return (inp["ckpt"] if inp.get("source") == "checkpoint"
            else f"seeded random weights of {inp.get('net')} (seed {inp.get('seed')})")


def _argv(inp: dict, out: Path) -> list[str]:
    src = ["--ckpt", inp["ckpt"]] if inp["source"] == "checkpoint" else \
        ["--net", str(inp["net"]), "--random-weights", str(inp["seed"])]
    opts = [x for k, v in inp["args"].items() if v is not None for x in (f"--{k.replace('_', '-')}", str(v))]
    return src + ["--out", str(out)] + opts


def _changed(old: dict, new: dict) -> str:
    if old.get("source") != new.get("source") or old.get("ckpt") != new.get("ckpt") or \
            (old.get("net"), old.get("seed")) != (new.get("net"), new.get("seed")):
        return f"it was made from {_what(old)}, now {_what(new)}"
    if (old.get("size"), old.get("mtime_ns")) != (new.get("size"), new.get("mtime_ns")):
        return f"{new.get('ckpt') or new.get('config')} changed since it was exported"
    if old.get("args") != new.get("args"):
        return f"the exporter's arguments changed ({old.get('args')} -> {new.get('args')})"
    return "the exporter's code changed since"


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(prog="python -m zynqflow.export.ensure", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--net", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dset", default="", help="the dataset tag DATA names (build/<net>/<tag>/)")
    p.add_argument("--ckpt", default="", help="the checkpoint named on make's command line (CKPT=)")
    p.add_argument("--candidate", action="append", default=[], help="default checkpoints, in order")
    p.add_argument("--random", type=int, default=None, help="seeded random weights, asked for (WEIGHTS=random)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights of a network without data")
    p.add_argument("--data-given", action="store_true", help="DATA was named on make's command line")
    p.add_argument("--args-given", action="store_true", help="EXPORT_ARGS was given on make's command line")
    p.add_argument("--force", action="store_true", help="export now (make export)")
    a = p.parse_args(own)
    out = Path(a.out)
    stamp = _read_json(out / EXPORT_INPUTS) if (out / "manifest.json").is_file() else None
    man = _read_json(out / "manifest.json") or {}
    try:
        args = export_args(exporter_parser().parse_args(["--random-weights", "0", "--net", a.net] + extra))
    except SystemExit:
        return _refuse(f"EXPORT_ARGS {' '.join(extra)!r} are not the exporter's options")

    reuse = (not a.force and not a.ckpt and a.random is None and stamp is not None
             and (not a.data_given or man.get("dataset") == a.dset))
    if a.ckpt:
        if not Path(a.ckpt).is_file():
            return _refuse(f"CKPT={a.ckpt}: no such checkpoint")
        src: dict = dict(ckpt=a.ckpt)
    elif a.random is not None:
        src = dict(net=a.net, seed=a.random)
    elif reuse:
        if not a.args_given:
            args = stamp.get("args", args)
        src = dict(ckpt=stamp["ckpt"]) if stamp.get("source") == "checkpoint" else \
            dict(net=stamp.get("net"), seed=stamp.get("seed"))
        if "ckpt" in src and not Path(src["ckpt"]).is_file():
            _say(f"using {out} as it is: it was exported from {src['ckpt']}, which is gone (re-export with "
                 "make export CKPT=<checkpoint>)")
            return 0
    else:
        found = next((c for c in a.candidate if c and Path(c).is_file()), None)
        if found:
            src = dict(ckpt=found)
        elif _has_dataset(a.net, a.data_given):
            want = next((c for c in a.candidate if c), f"build/{a.net}/{a.dset}/checkpoint.pt")
            return _refuse(f"no checkpoint for {a.net} on {a.dset or 'its dataset'}: {want} does not exist. "
                           f"Train it (make train NET={a.net}{' DATA=...' if a.data_given else ''}), name one "
                           "(CKPT=<checkpoint.pt>), or ask for seeded random weights (WEIGHTS=random [SEED=n])")
        else:
            _say(f"{a.net} has no dataset here and no checkpoint: seeded random weights (seed {a.seed}); its "
                 "figures are speed and bit-exactness, not accuracy")
            src = dict(net=a.net, seed=a.seed)
    want = export_inputs(src.get("ckpt"), src.get("net"), src.get("seed"), args)
    if not a.force and stamp is not None and stamp == want:
        _say(f"using {out}, exported from {_what(want)} (unchanged since)")
        return 0
    if not a.force:
        why = _changed(stamp, want) if stamp is not None else \
            f"{out} has no {EXPORT_INPUTS} (made by an older version)" if man else "no export yet"
        _say(f"exporting {_what(want)} -> {out}: {why}")
    rc = export_main(_argv(want, out))
    return 2 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
