"""Image-folder datasets: a folder of your own images, one subfolder per class.

Layouts (:func:`detect_layout` tells them apart from ``cifar-10-batches-py`` and
from Fashion-MNIST's IDX files, and says which it found):

* ``<dir>/train/<class>/...`` and ``<dir>/test/<class>/...`` (``<dir>/val/<class>/``
  optional);
* ``<dir>/<class>/...``: one folder, of which a fraction (``split``, default 0.1)
  of every class is held out as the test split. Which files are held out is
  fixed by a seeded hash of their paths: the same files every time, on every
  machine, and adding a file moves no other.

Files are found recursively under each class folder (hidden files and folders
skipped); a file counts when Pillow registers its extension (JPEG, PNG, BMP,
WebP, GIF, TIFF, PPM, ...); other files are ignored and counted.

Every image is brought to the network's input (``H x W x C``, 32 x 32 x 1 up to
256 x 256 x 3) by the host's own preprocessing, :func:`zynqflow.host.preprocess.to_frame`
with the recipe the manifest will carry, so the frames trained on are, byte for
byte, what ``zynqflow classify`` sends the accelerator for the same file.

The decoded frames live in a cache under ``build/data/<tag>/<key>/`` (or
``$ZYNQFLOW_DATA_CACHE``): one raw uint8 file per split (N x C x H x W), read
memory-mapped, so a set larger than RAM trains, plus labels and ``meta.json``.
The key is a hash of the file list (relative paths, labels, sizes, mtimes), the
input shape, the recipe, ``split`` and ``skip_bad``: a changed folder rebuilds
the cache, an unchanged one loads in the time it takes to list and stat it.
Images are decoded once, in parallel (one process per core), with a progress
bar; the cache is built in a temporary folder and renamed into place when
complete, so an error or a Ctrl-C leaves no half-written cache. Concurrent
loaders (``torchrun`` ranks) wait on a lock while one of them builds.

Errors (:class:`~zynqflow.model.data.DatasetError`) name the path: an unreadable
or truncated image (``skip_bad`` skips and counts them instead), an empty class,
a test class that train lacks, fewer than two classes, a folder of another layout.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zynqflow.spec.paths import BUILD, file_lock

CACHE_VERSION = 1             # bump when the cache format or the decoding changes
DECODE_WAIT_S = 900.0         # the longest wait for a decoder process to finish its (<= 256) images
DEFAULT_SPLIT = 0.1
SPLITS = ("train", "val", "test")
IDX_STEMS = ("train-images-idx3-ubyte", "t10k-images-idx3-ubyte")


def _error(msg: str):
    from .data import DatasetError

    return DatasetError(msg)


# ---- names -------------------------------------------------------------------------------
def folder_tag(path: str | os.PathLike) -> str:
    """The dataset tag of a folder: its name plus a short hash of its resolved path, so two
    folders of the same name never share ``build/<net>/<tag>/`` (the Makefile computes the
    same string: ``<name>-<first 8 hex digits of sha1(realpath)>``)."""
    p = Path(path).resolve()
    name = re.sub(rb"[^A-Za-z0-9._-]", b"_", p.name.encode()).decode() or "data"
    return f"{name}-{hashlib.sha1(str(p).encode()).hexdigest()[:8]}"


def cache_root() -> Path:
    return Path(os.environ.get("ZYNQFLOW_DATA_CACHE") or BUILD / "data")


def image_extensions() -> frozenset[str]:
    """Every file extension Pillow registers a decoder for (lower case, with the dot)."""
    from PIL import Image

    Image.init()
    return frozenset(e.lower() for e, fmt in Image.registered_extensions().items() if fmt in Image.OPEN)


# ---- layout ------------------------------------------------------------------------------
def _visible_dirs(d: Path) -> list[Path]:
    try:
        return sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as e:
        raise _error(f"{d}: cannot list the folder ({e.strerror})") from e


def detect_layout(d: str | os.PathLike) -> str:
    """``cifar10`` (cifar-10-batches-py pickles), ``idx`` (Fashion-MNIST IDX files),
    ``split-folders`` (train/<class>, test/<class>[, val/<class>]) or ``class-folders``
    (<class>/ only); a :class:`DatasetError` naming the folder for anything else."""
    d = Path(d)
    if not d.is_dir():
        raise _error(f"{d}: no such folder")
    if (d / "cifar-10-batches-py").is_dir() or (d / "data_batch_1").is_file():
        return "cifar10"
    if any((d / s).is_file() or (d / (s + ".gz")).is_file() for s in IDX_STEMS):
        return "idx"
    names = {p.name for p in _visible_dirs(d)}
    if "train" in names or "test" in names:
        if not {"train", "test"} <= names:
            have, lack = ("train", "test") if "train" in names else ("test", "train")
            raise _error(f"{d}: has {have}/ but no {lack}/ (expected {d}/train/<class>/ and {d}/test/<class>/, "
                         f"or one level of class folders {d}/<class>/ with a held-out --split)")
        return "split-folders"
    if names:
        return "class-folders"
    raise _error(f"{d}: not a dataset folder: no class subfolders (expected {d}/train/<class>/ and "
                 f"{d}/test/<class>/, {d}/<class>/, cifar-10-batches-py or Fashion-MNIST IDX files)")


LAYOUT_TEXT = {"split-folders": "image folders train/<class>/, test/<class>/",
               "class-folders": "image folders <class>/ with a held-out split",
               "cifar10": "CIFAR-10 python pickles (cifar-10-batches-py)",
               "idx": "IDX files (Fashion-MNIST)"}


@dataclass
class Listing:
    """The files of an image-folder dataset, per split: paths relative to the root, labels."""

    root: Path
    layout: str
    class_names: tuple[str, ...]
    files: dict[str, list[str]] = field(default_factory=dict)
    labels: dict[str, list[int]] = field(default_factory=dict)
    ignored: int = 0           # files whose extension Pillow does not read
    split: float | None = None

    def stat_key(self, skip_bad: bool = False) -> list:
        """(split, relative path, label, size, mtime_ns) of every file, for the cache key. A file that
        cannot be stat'ed (a dangling link, a symlink loop) is an error naming it, or with ``skip_bad``
        a row (size -1, the error) that the decoder will count as a bad image."""
        rows = []
        for s in self.files:
            for rel, lab in zip(self.files[s], self.labels[s]):
                try:
                    st = (self.root / rel).stat()
                except OSError as e:
                    if not skip_bad:
                        raise _error(f"{self.root / rel}: cannot stat ({e.strerror}); fix or remove it, or pass "
                                     "--skip-bad to skip and count bad images") from e
                    rows.append([s, rel, lab, -1, e.strerror])
                    continue
                rows.append([s, rel, lab, st.st_size, st.st_mtime_ns])
        return rows

    def describe(self, counts: dict[str, int] | None = None) -> str:
        """What was found; ``counts``: the images per split that remain (after skipping bad ones)."""
        have = counts or {s: len(v) for s, v in self.files.items()}
        counts = ", ".join(f"{have[s]} {s}" for s in SPLITS if s in have)
        held = f", {self.split:g} of each class held out as test" if self.layout == "class-folders" else ""
        ign = f"; {self.ignored} non-image files ignored" if self.ignored else ""
        return (f"{self.root}: {LAYOUT_TEXT[self.layout]}{held}: {len(self.class_names)} classes "
                f"({', '.join(self.class_names[:8])}{', ...' if len(self.class_names) > 8 else ''}), "
                f"{counts} images{ign}")


def _class_files(cdir: Path, exts: frozenset[str]) -> tuple[list[Path], int]:
    files, ignored = [], 0
    for dirpath, dirnames, filenames in os.walk(cdir):
        dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
        for n in sorted(filenames):
            if n.startswith("."):
                continue
            if os.path.splitext(n)[1].lower() in exts:
                files.append(Path(dirpath) / n)
            else:
                ignored += 1
    return files, ignored


def _held_out(rel: str, seed: int = 0) -> float:
    return int.from_bytes(hashlib.sha1(f"{seed}:{rel}".encode()).digest()[:8], "big") / 2.0 ** 64


def list_folder(root: str | os.PathLike, split: float | None = None) -> Listing:
    """Find the classes and files of an image-folder dataset (see the module docstring);
    every structural problem is a :class:`DatasetError` naming the path."""
    root = Path(root).resolve()
    layout = detect_layout(root)
    if layout not in ("split-folders", "class-folders"):
        raise _error(f"{root}: holds {LAYOUT_TEXT[layout]}, not image folders")
    exts = image_extensions()
    lst = Listing(root, layout, ())
    if layout == "split-folders":
        if split is not None:
            raise _error(f"{root}: has train/ and test/ folders; --split applies only to a single folder of "
                         "class folders")
        splits = [s for s in SPLITS if (root / s).is_dir()]
        per = {s: {c.name: c for c in _visible_dirs(root / s)} for s in splits}
        classes = tuple(sorted(per["train"]))
        for s in splits:
            for c in sorted(per[s]):
                if c not in per["train"]:
                    raise _error(f"{per[s][c]}: class '{c}' is in {s}/ but not in {root / 'train'}/ (the network "
                                 f"learns the classes of train/: {', '.join(classes) or 'none'})")
    else:
        splits = ["train", "test"]
        per = {"all": {c.name: c for c in _visible_dirs(root)}}
        classes = tuple(sorted(per["all"]))
        split = DEFAULT_SPLIT if split is None else float(split)
        if not 0 < split < 1:
            raise _error(f"{root}: --split {split} must be a fraction between 0 and 1")
        lst.split = split
    where = root / "train" if layout == "split-folders" else root
    if len(classes) < 2:
        raise _error(f"{where}: {len(classes)} class folder{'s' * (len(classes) != 1)} "
                     f"({', '.join(classes) or 'none'}); a classifier needs at least two")
    lst.class_names = classes
    label = {c: i for i, c in enumerate(classes)}
    lst.files = {s: [] for s in splits}
    lst.labels = {s: [] for s in splits}
    for src in per:
        for c, cdir in sorted(per[src].items()):
            files, ign = _class_files(cdir, exts)
            lst.ignored += ign
            if not files:
                raise _error(f"{cdir}: empty class: no image files ({ign} other files)" if ign else
                             f"{cdir}: empty class: no image files")
            rels = [f.relative_to(root).as_posix() for f in files]
            if src == "all":
                ranked = sorted(rels, key=_held_out)
                n_test = min(len(rels) - 1, max(1, round(split * len(rels)))) if len(rels) > 1 else 0
                test = set(ranked[:n_test])
                for r in rels:
                    s = "test" if r in test else "train"
                    lst.files[s].append(r)
                    lst.labels[s].append(label[c])
            else:
                lst.files[src] += rels
                lst.labels[src] += [label[c]] * len(rels)
    if layout == "class-folders" and not lst.files["test"]:
        raise _error(f"{root}: --split {split} holds out no image (every class has one image)")
    return lst


# ---- decoding ----------------------------------------------------------------------------
def frame_of(path, shape: tuple[int, int, int], recipe: dict, content: int | None = None) -> np.ndarray:
    """One file -> the uint8 H x W x C frame, by the host's preprocessing (the same call
    :func:`zynqflow.host.preprocess.frames_for` makes for an export of this dataset)."""
    from zynqflow.host.preprocess import to_frame

    return to_frame(path, shape, None, False, content=content, recipe=recipe)


def _decode_chunk(args) -> list[tuple[int, str]]:
    """Worker: decode files [lo, hi) into rows [lo, hi) of the memory-mapped cache file."""
    from zynqflow.host.errors import PreprocessError

    root, rels, lo, out_path, n, shape, recipe, content = args
    h, w, c = shape
    mm = np.memmap(out_path, np.uint8, "r+", shape=(n, c, h, w))
    bad = []
    for i, rel in enumerate(rels, start=lo):
        try:
            mm[i] = frame_of(Path(root) / rel, shape, recipe, content).transpose(2, 0, 1)
        except PreprocessError as e:
            bad.append((i, str(e)))
    mm.flush()
    del mm
    return bad


def _workers(n_files: int, workers: int | None) -> int:
    if workers is not None:
        return max(1, workers)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, n_files // 64))


def _decode_split(root: Path, rels: list[str], out_path: Path, shape, recipe, content, workers: int,
                  desc: str) -> list[tuple[int, str]]:
    n = len(rels)
    h, w, c = shape
    np.memmap(out_path, np.uint8, "w+", shape=(max(n, 1), c, h, w)).flush()
    step = max(16, min(256, -(-n // (workers * 8))))
    jobs = [(str(root), rels[lo:lo + step], lo, str(out_path), max(n, 1), shape, recipe, content)
            for lo in range(0, n, step)]
    try:
        from tqdm import tqdm
        bar = tqdm(total=n, desc=desc, unit="img", mininterval=1.0, file=sys.stderr, disable=n < 256)
    except ImportError:  # pragma: no cover - tqdm comes with the train extra
        bar = None
    bad: list[tuple[int, str]] = []
    try:
        if workers == 1 or len(jobs) == 1:
            for j in jobs:
                bad += _decode_chunk(j)
                if bar is not None:
                    bar.update(len(j[1]))
        else:   # never a fork beside another running thread; every wait bounded (spec.procs)
            from concurrent.futures import ProcessPoolExecutor

            from zynqflow.spec.procs import drain, pool_context
            with ProcessPoolExecutor(workers, mp_context=pool_context((__name__,))) as pool:
                futs = {pool.submit(_decode_chunk, j): j for j in jobs}
                names = {f: f"images {j[2]}..{j[2] + len(j[1]) - 1}" for f, j in futs.items()}
                for f, b in drain(pool, names, DECODE_WAIT_S, f"{workers} image decoders on {root}"):
                    bad += b
                    if bar is not None:
                        bar.update(len(futs[f][1]))
    finally:
        if bar is not None:
            bar.close()
    return sorted(bad)


def cache_key(lst: Listing, shape, recipe: dict, content: int | None, skip_bad: bool) -> str:
    blob = json.dumps(dict(version=CACHE_VERSION, layout=lst.layout, classes=lst.class_names, split=lst.split,
                           files=lst.stat_key(skip_bad), shape=list(shape), recipe=recipe, content=content,
                           skip_bad=bool(skip_bad)), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


@dataclass
class FolderCache:
    """A complete cache: where it is, its meta data, and the splits memory-mapped."""

    dir: Path
    meta: dict
    built: bool = False        # built by this call (else loaded)
    seconds: float = 0.0

    def images(self, split: str) -> np.ndarray:
        h, w, c = self.meta["shape"]
        n = self.meta["counts"][split]
        if n == 0:
            return np.zeros((0, c, h, w), np.uint8)
        # copy-on-write: writable for torch.from_numpy, never written back to the file
        return np.memmap(self.dir / f"{split}.u8", np.uint8, "c", shape=(n, c, h, w))

    def labels(self, split: str) -> np.ndarray:
        return np.load(self.dir / f"{split}.labels.npy")

    def files(self, split: str) -> list[str]:
        return self.meta["files"][split]


def build_cache(lst: Listing, shape: tuple[int, int, int], recipe: dict, content: int | None = None,
                skip_bad: bool = False, workers: int | None = None, root: Path | None = None,
                tag: str | None = None, log=print) -> FolderCache:
    """The cache of ``lst`` at ``shape`` and ``recipe``: loaded when one with the same key
    exists, else decoded (in parallel, progress bar) and renamed into place when complete."""
    shape = tuple(int(v) for v in shape)
    tag = tag or folder_tag(lst.root)
    base = (root or cache_root()) / tag
    key = cache_key(lst, shape, recipe, content, skip_bad)
    final = base / key
    t0 = time.time()
    with file_lock(base / ".lock"):
        if (final / "meta.json").is_file():
            return FolderCache(final, json.loads((final / "meta.json").read_text()), False, time.time() - t0)
        stage = base / f".{key}.tmp-{os.getpid()}"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        try:
            n_all = sum(len(v) for v in lst.files.values())
            nw = _workers(n_all, workers)
            log(f"decoding {n_all} images of {lst.root} to {shape[0]}x{shape[1]}x{shape[2]} "
                f"({recipe.get('recipe')} recipe, {nw} process{'es' * (nw > 1)}) -> {final}")
            meta = dict(version=CACHE_VERSION, root=str(lst.root), layout=lst.layout, tag=tag,
                        class_names=list(lst.class_names), shape=list(shape), recipe=recipe, content=content,
                        split=lst.split, skip_bad=bool(skip_bad), counts={}, files={}, skipped={})
            for s, rels in lst.files.items():
                raw = stage / f"{s}.u8"
                bad = _decode_split(lst.root, rels, raw, shape, recipe, content, nw, f"decode {s}")
                if bad and not skip_bad:
                    i, msg = bad[0]
                    more = f" (and {len(bad) - 1} more bad images)" if len(bad) > 1 else ""
                    raise _error(f"{msg}{more}; fix or remove it, or pass --skip-bad to skip and count bad images")
                labels = np.asarray(lst.labels[s], np.int64)
                keep = np.ones(len(rels), bool)
                keep[[i for i, _ in bad]] = False
                if bad:
                    _compact(raw, len(rels), shape, keep)
                    for i, msg in bad:
                        log(f"skipped: {msg}")
                meta["counts"][s] = int(keep.sum())
                meta["files"][s] = [r for r, k in zip(rels, keep) if k]
                meta["skipped"][s] = [rels[i] for i, _ in bad]
                np.save(stage / f"{s}.labels.npy", labels[keep])
                if s == "train":
                    left = np.bincount(labels[keep], minlength=len(lst.class_names))
                    for ci in np.flatnonzero(left == 0):
                        raise _error(f"{lst.root}: class '{lst.class_names[ci]}' has no readable training image "
                                     f"left after skipping {len(bad)} bad images")
                elif meta["counts"][s] == 0:
                    raise _error(f"{lst.root}: no readable image left in the {s} split after skipping bad ones")
            (stage / "meta.json").write_text(json.dumps(meta) + "\n")
            if final.exists():
                shutil.rmtree(final)
            os.rename(stage, final)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        same = ("shape", "recipe", "content", "split", "skip_bad")
        for old in base.iterdir():             # caches of an older state of the folder (same settings)
            if old.is_dir() and old != final and not old.name.startswith("."):
                try:
                    om = json.loads((old / "meta.json").read_text())
                except (OSError, ValueError):
                    continue
                if all(om.get(k) == meta.get(k) for k in same):
                    shutil.rmtree(old, ignore_errors=True)
    return FolderCache(final, meta, True, time.time() - t0)


def _compact(raw: Path, n: int, shape, keep: np.ndarray) -> None:
    """Drop the rows of skipped images from a split file, in place, in chunks."""
    h, w, c = shape
    mm = np.memmap(raw, np.uint8, "r+", shape=(max(n, 1), c, h, w))
    rows = np.flatnonzero(keep)
    for dst0 in range(0, len(rows), 256):
        src = rows[dst0:dst0 + 256]
        mm[dst0:dst0 + len(src)] = mm[src]
    mm.flush()
    del mm
    with open(raw, "r+b") as f:
        f.truncate(max(len(rows), 1) * c * h * w)


def folder_channels(lst: Listing, root: Path | None = None, tag: str | None = None, skip_bad: bool = False) -> int:
    """3 when any image of the folder is in colour (RGB, RGBA, CMYK, YCbCr, a colour
    palette), 1 when all are gray (L, LA, 1, I, F, 16-bit): read from the file headers,
    and remembered for this state of the folder (``<cache>/<tag>/channels.json``)."""
    base = (root or cache_root()) / (tag or folder_tag(lst.root))
    key = hashlib.sha256(json.dumps(lst.stat_key(skip_bad)).encode()).hexdigest()[:20]
    memo = base / "channels.json"
    try:
        known = json.loads(memo.read_text())
        if known.get("key") == key:
            return int(known["channels"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    c = _scan_channels(lst)
    base.mkdir(parents=True, exist_ok=True)
    tmp = memo.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(dict(key=key, channels=c)))
    os.replace(tmp, memo)
    return c


def _scan_channels(lst: Listing) -> int:
    from PIL import Image

    gray = {"1", "L", "LA", "La", "I", "F", "I;16", "I;16B", "I;16L", "I;16N"}
    for s in lst.files:
        for rel in lst.files[s]:
            try:
                with Image.open(lst.root / rel) as im:
                    mode = im.mode
                    if mode in ("P", "PA"):
                        pal = np.asarray(im.getpalette() or [], np.int64).reshape(-1, 3)
                        mode = "L" if pal.size == 0 or np.all(pal == pal[:, :1]) else "RGB"
            except Exception:  # noqa: BLE001 - bad files are named by the decoder later
                continue
            if mode not in gray:
                return 3
    return 1


# ---- a generated, learnable folder (tests, docs, trying the flow) -------------------------
SHAPES = ("circle", "square", "triangle", "cross")
_FORMATS = ((".jpg", "JPEG"), (".png", "PNG"), (".bmp", "BMP"), (".webp", "WEBP"))


def shapes_folder(root: str | os.PathLike, per_class: int = 40, test_per_class: int | None = 10,
                  classes: tuple[str, ...] = SHAPES, size: tuple[int, int] = (40, 72), seed: int = 0,
                  modes: tuple[str, ...] = ("RGB", "L", "RGBA", "P")) -> Path:
    """Write a learnable image-folder dataset: one shape per image (``classes`` among
    circle, square, triangle, cross), of random colour, size and position on a random
    background with noise, so neither the colour nor the position tells the class. Images
    of random sizes in ``size`` (not square), cycling through JPEG, PNG, BMP and WebP and
    the Pillow ``modes``. ``test_per_class`` None: the single-folder layout (<class>/),
    else train/<class>/ and test/<class>/."""
    from PIL import Image, ImageDraw

    root = Path(root)
    rng = np.random.default_rng(seed)
    splits = {None: per_class} if test_per_class is None else {"train": per_class, "test": test_per_class}
    k = 0
    for split, n in splits.items():
        for c in classes:
            d = root / c if split is None else root / split / c
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                w, h = (int(v) for v in rng.integers(size[0], size[1] + 1, 2))
                bg = rng.integers(0, 110, 3)
                fg = rng.integers(150, 256, 3)
                rng.shuffle(fg)
                a = np.clip(bg + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)
                im = Image.fromarray(a, "RGB")
                dr = ImageDraw.Draw(im)
                s = min(w, h) * rng.uniform(0.45, 0.75)
                cx = rng.uniform(s / 2, w - s / 2)
                cy = rng.uniform(s / 2, h - s / 2)
                x0, y0, x1, y1 = cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2
                col = tuple(int(v) for v in fg)
                if c == "circle":
                    dr.ellipse((x0, y0, x1, y1), fill=col)
                elif c == "square":
                    dr.rectangle((x0, y0, x1, y1), fill=col)
                elif c == "triangle":
                    dr.polygon([(cx, y0), (x1, y1), (x0, y1)], fill=col)
                else:
                    t = s / 3.2
                    dr.rectangle((cx - t / 2, y0, cx + t / 2, y1), fill=col)
                    dr.rectangle((x0, cy - t / 2, x1, cy + t / 2), fill=col)
                mode = modes[k % len(modes)]
                suffix, fmt = _FORMATS[k % len(_FORMATS)]
                if mode == "P" and fmt == "JPEG":
                    mode = "RGB"
                if mode == "RGBA" and fmt in ("JPEG", "BMP"):
                    mode = "RGB" if fmt == "JPEG" else "RGBA"
                out = im.convert(mode) if mode != "P" else im.convert("P", palette=Image.Palette.ADAPTIVE)
                out.save(d / f"{c}_{i:04d}{suffix}", fmt, **({"quality": 92} if fmt == "JPEG" else {}))
                k += 1
    return root


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m zynqflow.model.folders",
                                description="image-folder datasets: tag of a folder, layout, or a generated set")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tag", help="the dataset tag of a folder (build/<net>/<tag>/)")
    t.add_argument("folder")
    i = sub.add_parser("info", help="the layout, classes and image counts of a folder")
    i.add_argument("folder")
    i.add_argument("--split", type=float, default=None)
    g = sub.add_parser("shapes", help="write a learnable folder of coloured shapes (train/ and test/)")
    g.add_argument("folder")
    g.add_argument("--per-class", type=int, default=200)
    g.add_argument("--test-per-class", type=int, default=50)
    g.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    from .data import DatasetError

    try:
        if a.cmd == "tag":
            print(folder_tag(a.folder))
        elif a.cmd == "info":
            print(list_folder(a.folder, a.split).describe())
        else:
            print(shapes_folder(a.folder, a.per_class, a.test_per_class, seed=a.seed))
    except DatasetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
