"""Datasets as uint8 NCHW arrays: Fashion-MNIST (IDX), CIFAR-10 (python
pickles), folders of your own images (:mod:`zynqflow.model.folders`, decoded
by the host's preprocessing into a memory-mapped cache) and a deterministic
synthetic set. No torchvision; the loaders are numpy (and Pillow) only (torch
is imported by the batching and augmentation helpers).

Every loader validates what it reads and raises :class:`DatasetError`
naming the file; nothing is ever partially loaded.
"""

from __future__ import annotations

import gzip
import os
import pickle
import struct
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from zynqflow.spec.paths import BUILD
from zynqflow.spec.topology import CIFAR10_CLASSES, FASHION_CLASSES

if TYPE_CHECKING:
    import torch

DEBIAN_FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
FASHION_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


class DatasetError(ValueError):
    """A dataset file is missing, corrupt, truncated or inconsistent."""


@dataclass
class Split:
    """uint8 images N x C x H x W and int64 labels N."""

    images: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, n: int | None, seed: int = 0) -> "Split":
        """``n`` images that sample every class in proportion (:func:`stratified_indices`: the same
        images for the same ``seed``, in their order in the split); None or ``n`` >= the split: all."""
        if n is None or n >= len(self):
            return self
        idx = stratified_indices(self.labels, n, seed)
        return Split(self.images[idx], self.labels[idx])

    def class_counts(self, class_names) -> dict[str, int]:
        """{class name: images of that class in the split}."""
        counts = np.bincount(np.asarray(self.labels, np.int64), minlength=len(class_names))
        return {str(c): int(k) for c, k in zip(class_names, counts)}

    def hwc(self) -> np.ndarray:
        """The hardware layout: N x H x W x C, uint8."""
        return np.ascontiguousarray(self.images.transpose(0, 2, 3, 1))


def stratified_indices(labels, n: int, seed: int = 0) -> np.ndarray:
    """Sorted indices of ``n`` of ``labels`` that sample every class in proportion: each class
    gets its share of ``n`` (largest remainders; at least one image of every class when ``n`` is
    at least the number of classes), drawn by a seeded permutation within the class, so the same
    ``seed`` picks the same images on every machine (numpy's PCG64). Not a prefix: a split
    sorted by class (a folder of class folders, CIFAR-10 test pickles) gives every class."""
    labels = np.asarray(labels, np.int64)
    total = len(labels)
    n = max(0, min(int(n), total))
    order = np.argsort(labels, kind="stable")
    classes, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
    exact = n * counts / max(total, 1)
    take = np.minimum(np.floor(exact).astype(np.int64), counts)
    if n >= len(classes):
        take = np.maximum(take, 1)
    while take.sum() < n:                      # the largest remainders first (then the lower class)
        room = np.where(take < counts, exact - take, -np.inf)
        take[int(np.argmax(room))] += 1
    while take.sum() > n:                      # the minimum of one cost more than the share: from the largest excess
        over = np.where(take > 1, take - exact, -np.inf)
        take[int(np.argmax(over))] -= 1
    rng = np.random.default_rng(seed)
    picks = [order[s:s + c][rng.permutation(c)[:k]] for s, c, k in zip(starts, counts, take)]
    return np.sort(np.concatenate(picks)) if picks else np.zeros(0, np.int64)


@dataclass
class Dataset:
    name: str                       # the dataset tag: build/<net>/<name>/
    train: Split
    test: Split
    class_names: tuple[str, ...]
    val: Split | None = None        # image folders with a val/ folder
    recipe: dict | None = None      # image folders: the preprocessing recipe the frames were made with
    description: str = ""           # what was found where (image folders, CIFAR-10, IDX)

    @property
    def channels(self) -> int:
        return self.train.images.shape[1]

    @property
    def size(self) -> int:
        return self.train.images.shape[2]


# ---- IDX -------------------------------------------------------------------
def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DatasetError(f"{path}: cannot read ({e.strerror})") from e
    if path.suffix == ".gz":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as e:  # BadGzipFile is an OSError
            raise DatasetError(f"{path}: corrupt or truncated gzip stream ({e})") from e
    return raw


def read_idx(path: Path, expect_dims: int) -> np.ndarray:
    """Read an IDX file (optionally gzipped) of unsigned bytes."""
    raw = _read_bytes(path)
    if len(raw) < 4:
        raise DatasetError(f"{path}: truncated header ({len(raw)} bytes)")
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise DatasetError(f"{path}: bad magic number 0x{int.from_bytes(raw[:4], 'big'):08x} "
                           f"(expected 0x000008{expect_dims:02x}, unsigned-byte IDX)")
    if ndim != expect_dims:
        raise DatasetError(f"{path}: has {ndim} dimensions, expected {expect_dims}")
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DatasetError(f"{path}: truncated header")
    dims = struct.unpack(f">{ndim}I", raw[4:head])
    n = int(np.prod(dims))
    if len(raw) - head < n:
        raise DatasetError(f"{path}: truncated: header promises {n} bytes of data "
                           f"({' x '.join(map(str, dims))}), file holds {len(raw) - head}")
    if len(raw) - head > n:
        raise DatasetError(f"{path}: {len(raw) - head - n} unexpected trailing bytes")
    return np.frombuffer(raw, dtype=np.uint8, offset=head).reshape(dims).copy()


def _find_idx(directory: Path, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def fashion_mnist_dir(data: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Where the four IDX files are.

    An explicit directory ``data`` (``DATA_DIR=``, ``--data-dir``) is the only
    place looked at: it wins over the Debian package, and its files are read
    (and checked) from there; with ``download`` the missing ones are downloaded
    into it. Without one: the Debian package (``dataset-fashion-mnist``,
    ``/usr/share/datasets/fashion-mnist``), then ``build/data/fashion-mnist`` of
    the checkout (downloaded there if missing)."""
    stems = [s for pair in FASHION_FILES.values() for s in pair]
    if data is not None and str(data) != "":
        target = Path(data)
        if target.exists() and not target.is_dir():
            raise DatasetError(f"{target}: not a directory (DATA_DIR must be the directory holding "
                               f"{', '.join(stems)}, or their .gz)")
        candidates = [target]
    else:
        target = BUILD / "data" / "fashion-mnist"
        candidates = [DEBIAN_FASHION_DIR, target]
    for d in candidates:
        if d.is_dir() and all(_find_idx(d, s) for s in stems):
            return d
    missing = [s for s in stems if not (target.is_dir() and _find_idx(target, s))]
    where = ", ".join(map(str, candidates))
    if not download:
        raise DatasetError(f"Fashion-MNIST not found in {where}: {target} lacks {', '.join(missing)} (or .gz); "
                           "install the Debian package dataset-fashion-mnist or pass DATA_DIR=<dir with the "
                           "four IDX files>")
    target.mkdir(parents=True, exist_ok=True)
    for s in missing:
        dst = target / (s + ".gz")
        try:
            tmp = dst.with_suffix(".part")
            urllib.request.urlretrieve(FASHION_URL + s + ".gz", tmp)
            tmp.rename(dst)
        except OSError as e:
            raise DatasetError(f"Fashion-MNIST not found in {where} and the download of {s}.gz into {target} "
                               f"failed ({e}); install dataset-fashion-mnist or pass DATA_DIR=dir") from e
    return target


def pad_to(images: np.ndarray, size: int) -> np.ndarray:
    """Zero-pad N x C x h x w to N x C x size x size, centred."""
    h, w = images.shape[2:]
    if h > size or w > size:
        raise ValueError(f"images are {h}x{w}, larger than {size}x{size}")
    top, left = (size - h) // 2, (size - w) // 2
    out = np.zeros(images.shape[:2] + (size, size), dtype=images.dtype)
    out[:, :, top:top + h, left:left + w] = images
    return out


def load_idx_split(directory: Path, images_stem: str, labels_stem: str, pad: int = 32,
                   size: int | None = None) -> Split:
    """One split from IDX files; ``size``: the images must be ``size x size``."""
    ip, lp = _find_idx(directory, images_stem), _find_idx(directory, labels_stem)
    if ip is None or lp is None:
        missing = images_stem if ip is None else labels_stem
        raise DatasetError(f"{directory / missing}: no such file (or .gz)")
    images = read_idx(ip, 3)
    if size is not None and images.shape[1:] != (size, size):
        raise DatasetError(f"{ip}: images are {images.shape[1]} x {images.shape[2]}, expected {size} x {size}")
    labels = read_idx(lp, 1)
    if len(images) != len(labels):
        raise DatasetError(f"{ip}: {len(images)} images but {lp} has {len(labels)} labels")
    if labels.size and labels.max() > 9:
        raise DatasetError(f"{lp}: label {int(labels.max())} out of range 0..9")
    return Split(pad_to(images[:, None], pad), labels.astype(np.int64))


def load_fashion_mnist(data: str | os.PathLike | None = None, pad: int = 32) -> Dataset:
    """Fashion-MNIST from ``data`` (only there, when given; see :func:`fashion_mnist_dir`),
    every file checked: IDX headers, sizes (a truncated file names itself), 28 x 28 images,
    labels 0..9 and as many as images."""
    d = fashion_mnist_dir(data)
    return Dataset("fashion-mnist",
                   train=load_idx_split(d, *FASHION_FILES["train"], pad=pad, size=28),
                   test=load_idx_split(d, *FASHION_FILES["test"], pad=pad, size=28),
                   class_names=FASHION_CLASSES)


# ---- CIFAR-10 --------------------------------------------------------------
def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, "rb") as f:
            d = pickle.load(f, encoding="bytes")
    except FileNotFoundError as e:
        raise DatasetError(f"{path}: no such file (expected the cifar-10-batches-py layout)") from e
    except Exception as e:  # noqa: BLE001 - unpickling errors come in many types
        raise DatasetError(f"{path}: corrupt or truncated pickle ({type(e).__name__}: {e})") from e
    if not isinstance(d, dict) or b"data" not in d or b"labels" not in d:
        raise DatasetError(f"{path}: not a CIFAR-10 batch (no data/labels)")
    data = np.asarray(d[b"data"])
    labels = np.asarray(d[b"labels"], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DatasetError(f"{path}: data is {data.dtype} {data.shape}, expected uint8 N x 3072")
    if len(data) != len(labels):
        raise DatasetError(f"{path}: {len(data)} images but {len(labels)} labels")
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DatasetError(f"{path}: label out of range 0..9")
    return data.reshape(-1, 3, 32, 32), labels


def load_cifar10(data: str | os.PathLike) -> Dataset:
    d = Path(data)
    if (d / "cifar-10-batches-py").is_dir():
        d = d / "cifar-10-batches-py"
    if not d.is_dir():
        raise DatasetError(f"{d}: no such directory (expected cifar-10-batches-py)")
    parts = [_cifar_batch(d / f"data_batch_{i}") for i in range(1, 6)]
    tx, ty = _cifar_batch(d / "test_batch")
    return Dataset("cifar10", Split(np.concatenate([p[0] for p in parts]),
                                    np.concatenate([p[1] for p in parts])),
                   Split(tx, ty), CIFAR10_CLASSES)


# ---- synthetic ---------------------------------------------------------------
def synthetic(n_train: int = 512, n_test: int = 256, size: int = 32, channels: int = 1,
              classes: int = 10, seed: int = 0) -> Dataset:
    """Deterministic, learnable data: class c is a bright bar whose position
    and orientation depend on c, plus noise. Same seed, same bytes."""
    rng = np.random.default_rng(seed)

    def make(n: int) -> Split:
        labels = rng.integers(0, classes, n).astype(np.int64)
        img = rng.integers(0, 48, (n, channels, size, size)).astype(np.int64)
        band = max(1, size // (classes // 2 + 1))
        for i, c in enumerate(labels):
            pos = (c % (classes // 2 or 1)) * band
            if c < classes // 2:
                img[i, :, pos:pos + band, :] += 160
            else:
                img[i, :, :, pos:pos + band] += 160
        return Split(np.clip(img, 0, 255).astype(np.uint8), labels)

    return Dataset(f"synthetic{size}", make(n_train), make(n_test), tuple(f"class{c}" for c in range(classes)))


def _is_dir(p) -> bool:
    return bool(p) and Path(str(p)).is_dir()


def _folder_path(name: str, data) -> Path | None:
    """The directory a dataset argument points at, when it is not a dataset name: ``name``
    itself, or ``data`` for a generic name (``folder``) or a folder's tag."""
    if _is_dir(name):
        return Path(name)
    if _is_dir(data) and name.lower() not in _NAMED:
        return Path(data)
    return None


_NAMED = ("fashion-mnist", "fashion_mnist", "fmnist", "synthetic", "synth", "cifar10", "cifar-10")


def load_dataset(name: str, data: str | None = None, size: int = 32, channels: int | None = None,
                 recipe: str | dict | None = None, split: float | None = None, skip_bad: bool = False,
                 workers: int | None = None, log=print) -> Dataset:
    """``fashion-mnist`` (optionally ``DATA=dir``), ``synthetic``, ``cifar10`` (needs
    ``DATA=dir``), or a directory: the layout is detected (:func:`zynqflow.model.folders.detect_layout`)
    and said: CIFAR-10 pickles, Fashion-MNIST IDX files, or image folders
    (``train/<class>``, ``test/<class>`` or ``<class>/`` with ``split``), decoded to ``size``
    x ``size`` x ``channels`` (None: 3 if any image is in colour) by the host's
    preprocessing ``recipe`` (None/``auto``: the default for the data, ``plain``) into the
    memory-mapped cache. ``name`` may also be ``folder`` or a folder's tag with the
    directory in ``data``."""
    key = name.lower()
    folder = _folder_path(name, data)
    if folder is not None:
        from .folders import LAYOUT_TEXT, detect_layout

        layout = detect_layout(folder)
        if layout == "cifar10":
            ds = load_cifar10(folder)
        elif layout == "idx":
            ds = load_fashion_mnist(folder, pad=size)
        else:
            return load_folder(folder, size, channels, recipe, split, skip_bad, workers, log)
        ds.description = f"{folder}: {LAYOUT_TEXT[layout]}"
        return ds
    if key in ("fashion-mnist", "fashion_mnist", "fmnist"):
        return load_fashion_mnist(data, pad=size)
    if key in ("synthetic", "synth") or (key.startswith("synthetic") and key[9:].isdigit()):   # or its tag
        return synthetic(size=size)
    if key in ("cifar10", "cifar-10"):
        if not data:
            raise DatasetError("CIFAR-10 needs DATA=<dir with cifar-10-batches-py>")
        return load_cifar10(data)
    if "/" in name or key in ("folder", "imagefolder", "images"):
        raise DatasetError(f"{data if key in ('folder', 'imagefolder', 'images') else name}: no such folder")
    raise DatasetError(f"unknown dataset '{name}' (fashion-mnist, cifar10 with DATA=dir, synthetic, "
                       "or a folder: image folders train/<class>/ and test/<class>/, <class>/, "
                       "cifar-10-batches-py or IDX files)")


def folder_recipe(recipe: str | dict | None, tag: str, shape) -> dict:
    """The preprocessing recipe of an image-folder dataset: ``auto``/None -> the default
    for the data (``plain``), a recipe name, or a ``preprocess`` dict, checked as the host
    checks a manifest's."""
    from zynqflow.host.errors import PreprocessError
    from zynqflow.host.preprocess import check_recipe
    from zynqflow.spec.recipes import default_recipe

    if recipe in (None, "auto"):
        return default_recipe(tag, shape)
    raw = {"recipe": recipe} if isinstance(recipe, str) else recipe
    try:
        return check_recipe(raw, shape, "--recipe")
    except PreprocessError as e:
        raise DatasetError(str(e)) from e


def load_folder(root, size: int, channels: int | None = None, recipe: str | dict | None = None,
                split: float | None = None, skip_bad: bool = False, workers: int | None = None,
                log=print) -> Dataset:
    """An image-folder dataset through the cache (:mod:`zynqflow.model.folders`)."""
    from zynqflow.host.preprocess import content_size

    from . import folders as F

    lst = F.list_folder(root, split)
    tag = F.folder_tag(lst.root)
    if channels is None:
        channels = F.folder_channels(lst, tag=tag, skip_bad=skip_bad)
    if channels not in (1, 3):
        raise DatasetError(f"{lst.root}: {channels} input channels: image folders make gray (1) or RGB (3) frames")
    shape = (size, size, channels)
    r = folder_recipe(recipe, tag, shape)
    cache = F.build_cache(lst, shape, r, content_size(shape, tag), skip_bad, workers, tag=tag, log=log)
    skipped = {s: len(v) for s, v in cache.meta["skipped"].items() if v}
    n_skip = sum(skipped.values())
    desc = lst.describe(cache.meta["counts"]) + \
        (f"; {n_skip} bad image{'s' * (n_skip != 1)} skipped ("
         f"{', '.join(f'{k} {s}' for s, k in skipped.items())})" if n_skip else "") + \
        (f"; cache {cache.dir} ({'built' if cache.built else 'loaded'} in {cache.seconds:.1f} s)")
    test_counts = np.bincount(cache.labels("test"), minlength=len(lst.class_names))
    only_train = [c for c, k in zip(lst.class_names, test_counts) if k == 0]
    if only_train:
        log(f"warning: {lst.root}: {len(only_train)} class{'es' * (len(only_train) != 1)} in train but not in "
            f"test: {', '.join(only_train)} (trained on, never scored by the test top-1)")

    def split_of(s: str) -> Split:
        return Split(cache.images(s), cache.labels(s))
    val = split_of("val") if "val" in cache.meta["counts"] else None
    return Dataset(tag, split_of("train"), split_of("test"), tuple(lst.class_names), val=val, recipe=r,
                   description=desc)


def load_for_manifest(man: dict, data: str | None = None, data_dir: str | None = None, log=print) -> Dataset:
    """The dataset of an export's manifest at its input shape: ``data`` (a name or folder), else
    the folder the manifest names (``dataset_source``), else its ``dataset``; an image folder is
    decoded with the manifest's recipe, split and skip_bad, so the test split is the one trained with."""
    src = man.get("dataset_source") or {}
    h, _, c = (int(v) for v in man["input"]["shape"])
    name = data or src.get("path") or man.get("dataset") or "fashion-mnist"
    return load_dataset(name, data_dir, size=h, channels=c, recipe=man.get("preprocess"), split=src.get("split"),
                        skip_bad=bool(src.get("skip_bad")), log=log)


def dataset_tag(name: str) -> str:
    """Directory name under build/<net>/ for a dataset argument: ``fashion-mnist``,
    ``synthetic``, ``cifar10`` (also a folder of CIFAR-10 pickles), and for a folder of
    images its name plus a short hash of its path (:func:`zynqflow.model.folders.folder_tag`)."""
    key = name.lower()
    if key in ("fashion-mnist", "fashion_mnist", "fmnist"):
        return "fashion-mnist"
    if key in ("cifar10", "cifar-10"):
        return "cifar10"
    if key in ("synthetic", "synth"):
        return "synthetic"
    if Path(name).is_dir():
        from .folders import detect_layout, folder_tag

        try:
            layout = detect_layout(name)
        except DatasetError:
            layout = "folder"
        return {"cifar10": "cifar10", "idx": "fashion-mnist"}.get(layout) or folder_tag(name)
    return key


# ---- batches and augmentation (torch, no torchvision) ------------------------
def to_float(images_u8: "torch.Tensor") -> "torch.Tensor":
    """uint8 -> float exactly as the contract reads pixels: p * 2^-8."""
    return images_u8.float() / 256.0


def augment(x: "torch.Tensor", flip: bool = True, shift: int = 2, generator: "torch.Generator | None" = None
            ) -> "torch.Tensor":
    """Random horizontal flip and random translation by up to ``shift``
    pixels (zero fill) on a uint8 or float N x C x H x W batch."""
    import torch

    n, _, h, w = x.shape
    if flip:
        m = torch.rand(n, generator=generator) < 0.5
        x = torch.where(m[:, None, None, None], x.flip(3), x)
    if shift:
        p = torch.nn.functional.pad(x, (shift, shift, shift, shift))
        dy = torch.randint(0, 2 * shift + 1, (n,), generator=generator)
        dx = torch.randint(0, 2 * shift + 1, (n,), generator=generator)
        iy = (dy[:, None] + torch.arange(h)[None]).view(n, 1, h, 1).expand(n, x.shape[1], h, w)
        ix = (dx[:, None] + torch.arange(w)[None]).view(n, 1, 1, w).expand(n, x.shape[1], h, w)
        x = p[torch.arange(n)[:, None, None, None], torch.arange(x.shape[1])[None, :, None, None], iy, ix]
    return x


def batches(split: Split, batch_size: int, shuffle: bool = False, augment_fn=None,
            generator: "torch.Generator | None" = None):
    """Yield (float images, labels) batches from a uint8 split."""
    import torch

    n = len(split)
    order = torch.randperm(n, generator=generator) if shuffle else torch.arange(n)
    imgs = torch.from_numpy(split.images)
    labels = torch.from_numpy(split.labels)
    for i in range(0, n, batch_size):
        idx = order[i:i + batch_size]
        x = imgs[idx]
        if augment_fn is not None:
            x = augment_fn(x)
        yield to_float(x), labels[idx]
