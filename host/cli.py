"""``zynqflow``: classify images, stream a directory, benchmark backends.

    zynqflow classify shoe.png shirt.jpg --top 3          # default backend: pynq on a board, else csim
    zynqflow stream 'photos/*.png' --backend rtl
    zynqflow benchmark --backend golden,csim,rtl --frames 64
    zynqflow doctor                                       # first bring-up: every layer, bottom up
    zynqflow info
    zynqflow import model.onnx --data my_images/               # a Brevitas QONNX export (zynqflow[import])

Also ``python -m zynqflow.host.cli``. ``--export`` is an export directory
or its manifest.json; without it, from any directory: ``$ZYNQFLOW_EXPORT``
(the board wrapper sets it), ``"export"`` in ``~/.config/zynqflow/config.json``
(or ``$ZYNQFLOW_CONFIG``), the export ``board/deploy.sh`` installed, or the
checkout's ``build/zynqnet-mini/export`` (``zynqflow info`` says which).
Images are preprocessed by the manifest's recipe (``--preprocess``): for a
Fashion-MNIST network, the dataset's own recipe (trim, resize, sharpen,
centre, negate) for product photos on a plain light or dark background.
On rtl and pynq, ``--fclk-mhz`` sets the PL clock (checked against the
bitstream's timing) and ``--retries`` the recoveries per call; ``stream`` and
``benchmark`` print cycles per frame and frames/s at 100 MHz (measured by the
RTL twin, or the manifest's cycle model, labelled modelled), DRAM bytes per
frame where the engine measures them, and the throughput with and without the
host's own work.
Every input the command line names (export, images, bitstream, backend) is
checked, and named if wrong, before anything touches the PL. Steps that take
seconds on the board's Cortex-A9 (importing pynq, loading the bitstream, the
weight image into DDR, preprocessing images, a benchmark) print a progress line
or bar on stderr. ``--debug`` (or ``ZYNQFLOW_DEBUG=1``) shows the traceback of
an error.
Exit status: 0 ok; 1 the accelerator failed (network-ID or engine mismatch,
timeout, error frame) or a doctor step failed; 2 usage, bad option values,
missing or wrong files (weights.bin), unknown or unavailable backend; 130
interrupted.

On a board, ``/usr/local/bin/zynqflow`` runs this as root through the root-owned runner
(:mod:`zynqflow.host.runner`): there it takes only the deployed, root-owned export and bitstream
(``--export``, ``--bit``, ``--out`` and ``import`` are refused; backends pynq and golden), and it
reads the images the command line names with the caller's rights, not root's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from pathlib import Path

import numpy as np

from .accelerator import BACKENDS, CLOCKS, Accelerator, have_cxx, resolve_backend
from . import errors
from .errors import PreprocessError
from .errors import AcceleratorError, BackendError, EngineMismatch, ExportFilesError, HostError, NetworkIdMismatch
from .manifest import BACKEND_FILES, Export, default_export, xrt_hint
from .preprocess import expand_inputs, frames_for, recipe_for
from .progress import bar, step
from zynqflow.spec.recipes import RECIPES


# ---- option values: argparse type functions (argparse names the flag in its error) ----------
def _number(text: str, kind):
    try:
        v = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {'an integer' if kind is int else 'a number'}") from None
    if kind is float and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return v


def positive_int(text: str) -> int:
    v = _number(text, int)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return v


def nonnegative_int(text: str) -> int:
    v = _number(text, int)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return v


def positive_seconds(text: str) -> float:
    v = _number(text, float)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a time in seconds > 0, got {text}")
    return v


def positive_mhz(text: str) -> float:
    v = _number(text, float)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a clock in MHz > 0, got {text}")
    return v


def probability(text: str) -> float:
    v = _number(text, float)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"must be a probability in [0, 1), got {text}")
    return v


def load_frames(export: Export, files, invert: bool, recipe: str) -> np.ndarray:
    """Every image preprocessed (each file named if it cannot be), with a bar."""
    out = []
    for i, f in enumerate(files, 1):
        out.append(frames_for(export, [f], invert, recipe))
        bar(i, len(files), f"preprocessing {len(files)} images")
    if not out:
        raise PreprocessError("no image to classify")
    return np.concatenate(out)


def _common(p: argparse.ArgumentParser, backend_help: str = "auto") -> None:
    p.add_argument("--export", default=None,
                   help="export directory or manifest.json (default: $ZYNQFLOW_EXPORT, else \"export\" in "
                        "~/.config/zynqflow/config.json, else the export deploy.sh installed, else the "
                        "checkout's build/zynqnet-mini/export)")
    p.add_argument("--backend", default=None,
                   help=f"{' | '.join(BACKENDS)} | auto (default {backend_help}: pynq on a PYNQ board with a "
                        "bitstream, else csim)")
    p.add_argument("--bit", default=None, help="pynq: bitstream (.bit, with its .hwh beside it)")
    p.add_argument("--no-download", action="store_true",
                   help="pynq: use the bitstream already loaded instead of programming it again (the network-ID "
                        "check still runs)")
    p.add_argument("--timeout", type=positive_seconds, default=None,
                   help="rtl/pynq: seconds per DMA wait (driver clock), > 0")
    p.add_argument("--fclk-mhz", type=positive_mhz, default=None,
                   help="rtl/pynq: set the PL clock FCLK0 to this (the Zynq's divisors pick the nearest); refused "
                        "above what the bitstream's timing record allows (default: the clock the bitstream set)")
    p.add_argument("--retries", type=nonnegative_int, default=None,
                   help="rtl/pynq: recoveries per call after a DMA error or timeout (DMA reset, engine drained, "
                        "frames sent again; default 2)")
    p.add_argument("--backpressure", type=probability, default=0.0,
                   help="rtl: probability of a stall per cycle on both DMA streams, in [0, 1) (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the traceback of an error (also ZYNQFLOW_DEBUG=1)")


def _images(p: argparse.ArgumentParser) -> None:
    p.add_argument("--invert", action="store_true",
                   help="invert pixels as the last step (dark objects on light backgrounds, plain recipe)")
    p.add_argument("--preprocess", choices=("auto",) + RECIPES, default="auto",
                   help="image recipe: auto (the manifest's; Fashion-MNIST networks: trim, resize, sharpen, "
                        "centre, negate as the dataset was made), fashion-mnist, or plain (centre-crop and resize)")


def _backend_opts(a, name: str) -> dict:
    driver = {k: v for k, v in dict(fclk_mhz=a.fclk_mhz, retries=a.retries).items() if v is not None}
    if name == "pynq":
        return dict(bit=a.bit, timeout_s=a.timeout, download=not a.no_download, progress=True, **driver)
    if name == "rtl":
        return dict(timeout_s=a.timeout, backpressure=a.backpressure, **driver)
    if name == "rtl-fast":
        return dict(backpressure=a.backpressure)
    return {}


def _export(a) -> Export:
    runner = getattr(a, "runner", None)
    if runner is not None:                      # the deployed, root-owned export (checked by the runner)
        return Export(runner.export)
    if a.export:
        return Export(a.export)
    path, origin = default_export()
    try:
        return Export(path)
    except ExportFilesError as e:
        raise ExportFilesError(f"{e} [default export, from {origin}]") from e


def _checked(a, name: str | None = None) -> tuple[Export, str]:
    """The export, the backend and what that backend needs, checked (and named if wrong) before
    anything touches the PL: the export's files, weights.bin against the manifest, the bitstream
    and its .hwh (pynq)."""
    export = _export(a)
    name = resolve_backend(name or a.backend, export, a.bit)
    runner = getattr(a, "runner", None)
    if runner is not None and name not in runner.backends:
        raise BackendError(f"the {name} backend does not run under the root runner (only {', '.join(runner.backends)}): "
                           f"run it as yourself, python3 -m zynqflow.host.cli ... --backend {name}")
    export.require(name)
    if name in ("pynq", "rtl", "rtl-fast"):
        export.weight_image()
    if name == "pynq":
        bit, _ = export.find_bitstream(a.bit)
        if a.fclk_mhz is not None:                # refused now, not after the PL has been programmed
            from .board import check_fclk_before_download

            check_fclk_before_download(a.fclk_mhz, bit)
    return export, name


# ---- under the root runner ---------------------------------------------------------------------
REFUSED_UNDER_RUNNER = {
    "export": "--export: the runner runs as root and takes only the export deploy.sh installed, root-owned, in {e}",
    "bit": "--bit: the runner runs as root and loads only the bitstream deploy.sh installed, root-owned, in {e} (pynq "
           "would also insert a .dtbo beside another one, and its AXI masters reach all of DDR)",
    "out": "--out: the runner runs as root and writes no file a user names; write the table yourself: "
           "zynqflow benchmark --json > FILE",
}


def _runner_refusals(a) -> None:
    """What the root runner does not take from a caller (see the module docstring)."""
    e = a.runner.export
    asked = [b.strip() for b in (a.backend or "").split(",") if b.strip() and b.strip() not in ("auto", "default")]
    if a.backend == "all" or any(b not in a.runner.backends for b in asked):
        raise BackendError(f"--backend {a.backend}: the root runner runs only {', '.join(a.runner.backends)} (the "
                           "simulations build and run code as root); run them as yourself: python3 -m "
                           "zynqflow.host.cli ...")
    for opt, why in REFUSED_UNDER_RUNNER.items():
        if getattr(a, opt, None):
            raise HostError(f"{why.format(e=e)}. To use another export, bitstream or output file: deploy it "
                            "(make deploy), or run python3 -m zynqflow.host.cli as root yourself (sudo asks the "
                            "password)")


def _read_images(a, export: Export, patterns, limit: int = 0) -> tuple[list, np.ndarray]:
    """The files the command line names (directories, globs) and their frames, preprocessed. Under
    the root runner this runs in a child process with the caller's rights (a file the caller may not
    read stays unread), and only uint8 frames of the export's shape and file names come back."""
    def job():
        files = expand_inputs(patterns)
        if limit:
            files = files[:limit]
        return files, load_frames(export, files, a.invert, a.preprocess)

    runner = getattr(a, "runner", None)
    if runner is None or runner.caller is None:
        return job()
    from .preprocess import _pil

    _pil()[0].init()          # Pillow and its format plugins imported here, by root's checked imports
    return _frames_from_caller(runner.as_caller(lambda: _frames_message(job)), export)


def _frames_message(job) -> bytes:
    """What the caller's child sends: a JSON line (file names and the frames' shape, or an error),
    then the frames' bytes."""
    try:
        files, frames = job()
    except HostError as e:
        return json.dumps({"error": type(e).__name__, "message": str(e)}).encode() + b"\n"
    frames = np.ascontiguousarray(frames)
    if frames.dtype != np.uint8:
        return json.dumps({"error": "PreprocessError", "message": f"frames are {frames.dtype}, not uint8"}).encode() + b"\n"
    return json.dumps({"files": [str(f) for f in files], "shape": list(frames.shape)}).encode() + b"\n" + frames.tobytes()


def _frames_from_caller(data: bytes, export: Export) -> tuple[list, np.ndarray]:
    """Parse what the caller's child sent, as untrusted input: JSON and raw uint8 only (nothing that
    could run code in this root process), every size checked."""
    head, _, body = data.partition(b"\n")
    try:
        h = json.loads(head)
    except ValueError:
        raise PreprocessError("reading the images as the caller gave no answer") from None
    if not isinstance(h, dict):
        raise PreprocessError("reading the images as the caller gave a malformed answer")
    if "error" in h:
        cls = getattr(errors, str(h["error"]), None)
        if not (isinstance(cls, type) and issubclass(cls, HostError)):
            cls = PreprocessError
        raise cls(str(h.get("message", "")))
    files, shape = h.get("files"), h.get("shape")
    ok = (isinstance(files, list) and all(isinstance(f, str) for f in files) and isinstance(shape, list)
          and all(isinstance(v, int) and v >= 0 for v in shape) and len(shape) == 1 + len(export.input_shape)
          and shape[0] == len(files) and tuple(shape[1:]) == tuple(export.input_shape)
          and len(body) == int(np.prod(shape)))
    if not ok:
        raise PreprocessError("reading the images as the caller gave a malformed answer")
    return [Path(f) for f in files], np.frombuffer(body, np.uint8).reshape(shape).copy()


def _check_out(path) -> None:
    """``--out``: a file that can be written (not a directory, its directory there), before any work."""
    p = Path(path)
    if p.is_dir():
        raise HostError(f"--out {p}: is a directory; name a file (e.g. {p / 'benchmark.json'})")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise HostError(f"--out {p}: not writable")
        return
    d = p.parent
    if not d.is_dir():
        raise HostError(f"--out {p}: no such directory {d}")
    if not os.access(d, os.W_OK | os.X_OK):
        raise HostError(f"--out {p}: cannot create a file in {d}")


def _open(a, export: Export, name: str) -> Accelerator:
    """The accelerator, with a progress line (pynq: importing pynq, loading the bitstream and parsing
    the .hwh, the weight image into DDR take seconds on the A9)."""
    what = {"rtl": "building the RTL simulator (cached)", "csim": "building the C simulation (cached)"}
    with step(f"opening the {name} backend" + (f": {what[name]}" if name in what else "")):
        return Accelerator(export, name, **_backend_opts(a, name))


def _print_topk(res, k: int, sources) -> None:
    for i, top in enumerate(res.topk(k)):
        src = sources[i] if sources else f"frame {i}"
        best = ", ".join(f"{t['name']} ({t['p']:.1%}, logit {t['score']:+.3f})" for t in top)
        print(f"{src}: {best}")


def _fmt_ms(d: dict) -> str:
    return " ".join(f"{k}={v:.4g} ms" for k, v in d.items())


def figure_lines(s: dict) -> list[str]:
    """The engine's figures of a run summary: cycles per frame and frames/s at 100 MHz (measured
    by the RTL twin, or modelled), DRAM bytes per frame where measured, the host's share."""
    lines = []
    if s.get("cycles_per_frame"):
        lines.append(f"cycles per frame {s['cycles_per_frame']} -> {s['fps_at_100MHz']:.1f} frames/s at 100 MHz "
                     f"[{s['cycles_from']}]")
    if s.get("dram_rd_bytes_per_frame") is not None:
        lines.append(f"DRAM per frame: {s['dram_rd_bytes_per_frame']} bytes read, {s['dram_wr_bytes_per_frame']} "
                     f"bytes written [{s['dram_from']}]")
    tp = s.get("throughput")
    if tp and s.get("backend") in ("rtl", "pynq"):
        lines.append(f"throughput: {tp['fps_accelerator_only']:.1f} frames/s accelerator only "
                     f"[{tp['accelerator_only_from']}], {tp['fps_including_host']:.1f} frames/s including host "
                     f"[{tp['including_host_from']}]; host {tp['host_seconds_per_frame'] * 1e6:.1f} us per frame")
    return lines


def cmd_classify(a) -> int:
    export, name = _checked(a)
    files, frames = _read_images(a, export, a.images)
    with _open(a, export, name) as acc:
        with step(f"classifying {len(frames)} frame{'s' * (len(frames) != 1)} on {name}"):
            res = acc.classify(frames)
        if a.json:
            print(json.dumps(dict(backend=res.backend, network=acc.export.network,
                                  results=[dict(file=str(f), label=int(l), name=n, topk=t)
                                           for f, l, n, t in zip(files, res.labels, res.names, res.topk(a.top))]),
                             indent=1))
        else:
            print(f"{acc.export.network} on {res.backend} ({len(files)} image{'s' * (len(files) != 1)}, "
                  f"top {a.top}):")
            _print_topk(res, a.top, [str(f) for f in files])
    return 0


def cmd_stream(a) -> int:
    export, name = _checked(a)
    files, frames = _read_images(a, export, a.inputs, a.limit)
    with _open(a, export, name) as acc:
        with step(f"streaming {len(frames)} frames on {name}"):
            res = acc.stream(frames)
        s = res.summary()
        if a.json:
            s.update(results=[dict(file=str(f), label=int(l), name=n) for f, l, n in
                              zip(files, res.labels, res.names)])
            print(json.dumps(s, indent=1, default=str))
        else:
            _print_topk(res, a.top, [str(f) for f in files])
            print(f"{len(files)} frames on {res.backend}: {res.fps:.1f} frames/s, latency "
                  f"{_fmt_ms(res.latency_ms())} ({res.clock})")
            for line in figure_lines(s):
                print(line)
    return 0


def _bench_frames(export: Export, n: int, source: str) -> np.ndarray:
    if source == "vectors":
        try:
            v, _ = export.vectors()
        except HostError:
            v = np.zeros((0,) + export.input_shape, np.uint8)
        if len(v):
            return v[np.arange(n) % len(v)]
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n,) + export.input_shape, dtype=np.uint8)


def cmd_benchmark(a) -> int:
    if a.out:
        _check_out(a.out)                        # before any work
    export = _export(a)
    runner = getattr(a, "runner", None)
    if a.backend in (None, "", "default", "all"):
        names = ["golden"] + (["csim"] if have_cxx() else []) + (["rtl"] if a.backend == "all" else [])
        try:
            if resolve_backend("auto", export, a.bit) == "pynq":
                names.append("pynq")
        except HostError:
            if a.backend == "all":
                raise
        if runner is not None:
            names = [n for n in names if n in runner.backends]
    else:
        names = [resolve_backend(n.strip(), export, a.bit) for n in a.backend.split(",") if n.strip()]
    for name in names:                               # every backend's inputs before the first runs
        _checked(a, name)
    frames = _bench_frames(export, a.frames, a.source)
    rows, ref = [], None
    for i, name in enumerate(names, 1):
        n = min(a.frames, a.rtl_frames) if name == "rtl" else a.frames
        with _open(a, export, name) as acc:
            with step(f"[{i}/{len(names)}] streaming {n} frames on {name}"):
                res = acc.stream(frames[:n])
        s = res.summary()
        if ref is None:
            ref = res.logits
        m = min(len(ref), len(res.logits))
        s["bit_exact_vs_first"] = bool(np.array_equal(ref[:m], res.logits[:m]))
        rows.append(s)
        if not a.json:
            line = (f"{name:7s} {s['frames']:5d} frames  {s['fps']:12.1f} frames/s  latency {_fmt_ms(s['latency_ms'])}"
                    f"  [{s['clock']}]")
            for extra in figure_lines(s):
                line += f"\n        {extra}"
            if s.get("sim_wall_seconds"):
                line += f"; simulator wall time {s['sim_wall_seconds']:.2f} s ({s['sim_wall_fps']:.1f} frames/s)"
            print(line, flush=True)
    if a.json:
        print(json.dumps(dict(network=export.network, network_id=f"0x{export.network_id:08x}", rows=rows),
                         indent=1, default=str))
    else:
        agree = all(r["bit_exact_vs_first"] for r in rows)
        print(f"logits {'identical' if agree else 'DIFFER'} across {', '.join(names)}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(network=export.network, network_id=f"0x{export.network_id:08x}", rows=rows), f,
                      indent=1, default=str)
    return 0 if all(r["bit_exact_vs_first"] for r in rows) else 1


def cmd_info(a) -> int:
    from .board import on_board

    export = _export(a)
    origin = ("--export" if a.export else "the deployed export (root runner)" if getattr(a, "runner", None)
              else default_export()[1])
    cm = export.cycles_model
    info = dict(export=str(export.dir), export_from=origin, network=export.network,
                network_id=f"0x{export.network_id:08x}",
                input=dict(shape=list(export.input_shape), color=export.color), classes=export.class_names,
                engine=dict(n_pe=export.manifest["engine"]["n_pe"], n_ci=export.manifest["engine"]["n_ci"],
                            build_params=f"0x{export.build_params:08x}"),
                memory=dict(weight_image_bytes=export.weight_image_bytes, scratch_bytes=export.scratch_bytes),
                cycles_model=dict(cycles=cm.get("cycles"), fps_at_100mhz=cm.get("fps_at_100mhz"),
                                  label="modelled (manifest cycles_model), not a measurement"),
                preprocess=recipe_for(export), on_board=on_board(), xilinx_xrt=os.environ.get("XILINX_XRT"),
                default_backend=resolve_backend("auto", export, a.bit), backends={})
    for b in BACKENDS:
        try:
            export.require(b)
            if b in ("pynq", "rtl", "rtl-fast"):
                export.weight_image()                 # weights.bin checked against the manifest
            if b == "pynq":
                bit, hwh = export.find_bitstream(a.bit)
                ok = f"bitstream {bit}"
            else:
                ok = "files present: " + ", ".join(str(export.file(k).name) for k in BACKEND_FILES[b])
        except HostError as e:
            ok = f"unavailable: {e}"
        info["backends"][b] = ok
    if a.json:
        print(json.dumps(info, indent=1))
    else:
        print(f"{info['network']} ({info['network_id']}) from {info['export']} ({origin})")
        print(f"input {export.input_shape} {export.color}, classes: {', '.join(export.class_names)}")
        e, mem = info["engine"], info["memory"]
        print(f"engine {e['n_pe']} x {e['n_ci']} MAC array; DDR: weight image {mem['weight_image_bytes']} bytes, "
              f"activation scratch {mem['scratch_bytes']} bytes; cycle model {cm.get('cycles')} cycles per frame "
              f"({cm.get('fps_at_100mhz') or 0:.1f} frames/s at 100 MHz, modelled)")
        print(f"preprocessing: {json.dumps(info['preprocess'])}")
        print(f"XILINX_XRT: {info['xilinx_xrt'] or '(not set)'}")
        print(f"default backend: {info['default_backend']} (on a PYNQ board: {info['on_board']})")
        for b, v in info["backends"].items():
            print(f"  {b:7s} [{CLOCKS[b]}] {v}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="zynqflow", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("classify", help="top-k classes of image files (PNG, JPEG, ... or .npy)")
    c.add_argument("images", nargs="+", help="image files, directories or glob patterns")
    c.add_argument("--top", type=positive_int, default=3, help="classes per image (default 3)")
    _images(c)
    _common(c)
    c.set_defaults(func=cmd_classify)
    s = sub.add_parser("stream", help="frames back to back from a directory or glob; throughput and latency")
    s.add_argument("inputs", nargs="+", help="directory or glob pattern (quote it) or files")
    s.add_argument("--top", type=positive_int, default=1, help="classes per image (default 1)")
    s.add_argument("--limit", type=nonnegative_int, default=0, help="at most this many files (0: all)")
    _images(s)
    _common(s)
    s.set_defaults(func=cmd_stream)
    b = sub.add_parser("benchmark", help="frames/s and latency percentiles per backend, and bit-exactness")
    _common(b, backend_help="golden,csim (+pynq on a board); 'all' adds rtl; or a comma-separated list")
    b.add_argument("--frames", type=positive_int, default=64, help="frames per backend (default 64)")
    b.add_argument("--rtl-frames", type=positive_int, default=16, help="at most this many on rtl (default 16)")
    b.add_argument("--source", choices=("vectors", "random"), default="vectors",
                   help="the export's test vectors (repeated) or random frames")
    b.add_argument("--out", default=None, help="also write the table as JSON to this file")
    b.set_defaults(func=cmd_benchmark)
    i = sub.add_parser("info", help="the export, the backends available here, the default backend")
    _common(i)
    i.set_defaults(func=cmd_info)
    d = sub.add_parser("doctor", help="first bring-up: checks every layer bottom up, each passed or failed "
                                      "with the fix (environment, .bit/.hwh and the overlay, IPs, registers, DMA, "
                                      "clock, DMA and CMA, network ID, weights, a frame)")
    _common(d, backend_help="pynq on a board; rtl: the same checks against the RTL simulation")
    d.set_defaults(func=cmd_doctor)
    # `zynqflow import ...` goes to the importer before this parser (main); listed here for --help
    sub.add_parser("import", help="a Brevitas QONNX export -> network config and checkpoint (needs zynqflow[import]; "
                                  "zynqflow import -h)")
    return p


def cmd_doctor(a) -> int:
    from .doctor import main as doctor_main

    return doctor_main(a, _export, _backend_opts)


def _fail(e: Exception, code: int, prefix: str = "") -> int:
    msg = str(e)
    if "no devices found" in msg.lower():      # pynq's RuntimeError('No Devices Found'), wrapped by the backend
        msg = xrt_hint(msg)
    print(f"zynqflow: {prefix}{msg}", file=sys.stderr)
    return code


def cmd_import(argv: list[str]) -> int:
    """``zynqflow import model.onnx ...``: a Brevitas QONNX export into the flow, by the ``import``
    extra, imported only here and by name (the board CLI stays torch- and onnx-free)."""
    try:   # by name: the host package imports no floor above it (tests/test_layers.py)
        import_main = __import__("zynqflow.export.qonnx_import", fromlist=["main"]).main
    except ImportError as e:
        print(f"zynqflow import needs the import extra (brevitas, qonnx, onnx): pip install 'zynqflow[import]' "
              f"({e})", file=sys.stderr)
        return 2
    return import_main(argv)


def debugging(a=None) -> bool:
    return bool(getattr(a, "debug", False)) or os.environ.get("ZYNQFLOW_DEBUG", "") not in ("", "0")


def main(argv=None, runner=None) -> int:
    """The command line. ``runner``: the root runner's :class:`~zynqflow.host.runner.Runner` when this
    runs as root for another user (the deployed export only, the caller's images read as the caller)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    lead = 1 if argv[:1] == ["--debug"] else 0       # the board wrapper passes ZYNQFLOW_DEBUG as --debug
    if argv[lead:lead + 1] == ["import"]:
        if runner is not None:
            print("zynqflow: import does not run under the root runner (it writes files); run it as yourself: "
                  "python3 -m zynqflow.host.cli import ...", file=sys.stderr)
            return 2
        return cmd_import(argv[lead + 1:])
    p = build_parser()
    p.add_argument("--debug", action="store_true", help="show the traceback of an error (also ZYNQFLOW_DEBUG=1)")
    a = p.parse_args(argv)
    a.runner = runner
    try:
        if runner is not None:
            _runner_refusals(a)
        return a.func(a)
    except KeyboardInterrupt:
        print("zynqflow: interrupted", file=sys.stderr)
        return 130
    except HostError as e:
        if debugging(a):
            traceback.print_exc()
        if isinstance(e, (NetworkIdMismatch, EngineMismatch)):
            return _fail(e, 1)
        if isinstance(e, AcceleratorError):
            return _fail(e, 1, "accelerator error: ")
        return _fail(e, 2)
    except Exception as e:  # noqa: BLE001 - a bug, or a library's error we did not name: say so
        if debugging(a):
            traceback.print_exc()
            return _fail(e, 1, f"unexpected {type(e).__name__}: ")
        return _fail(e, 1, f"unexpected {type(e).__name__} (run again with --debug or ZYNQFLOW_DEBUG=1 for the "
                           "traceback): ")


if __name__ == "__main__":
    sys.exit(main())
