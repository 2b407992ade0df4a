"""Images and arrays -> the network's input frames (uint8, HWC).

The rule, applied to each image (a PNG/JPEG/... file read with Pillow, a
Pillow image, or a numpy array):

1. **Pixels.** Arrays: ``H x W`` (gray), ``H x W x 1``, ``H x W x 3`` (RGB) or
   ``H x W x 4`` (RGBA, alpha dropped); uint8 as is, floats with values in
   [0, 1] scaled by 255 (other floats taken as 0..255), then rounded and
   clipped to 0..255. Files: decoded by Pillow, palette/alpha/16-bit modes
   converted, EXIF orientation applied.
2. **Colour** as the manifest's ``input.color`` says: ``gray`` -> Pillow's
   ``L`` conversion (ITU-R 601-2 luma, ``L = R*299/1000 + G*587/1000 +
   B*114/1000``); ``rgb`` -> gray images replicated into three channels.
3. **Size** to the manifest's ``input.shape`` (``S x S``):

   * already ``S x S``: unchanged;
   * exactly 28 x 28 and ``S > 28`` (Fashion-MNIST's native size): zero-padded
     to ``S x S``, centred (2 pixels each side for S = 32), as
     ``zynqflow.model.data`` pads the dataset -- no resampling;
   * anything else: centre-cropped to a square (the shorter side), then
     resized with Pillow's bilinear filter (antialiased when shrinking) to
     ``S x S`` -- or, for a network trained on Fashion-MNIST (manifest
     ``dataset`` = ``fashion-mnist``, ``S > 28``), to 28 x 28 and then
     zero-padded to ``S x S`` like the dataset, so the object covers the same
     central 28 x 28 area as in training.
4. Optional ``invert`` (255 - p), for dark-on-light photos fed to a network
   trained on light-on-dark images (Fashion-MNIST).

The result is a contiguous uint8 ``S x S x C`` array, which the DMA sends row
by row, pixel by pixel, channel by channel (HWC), four bytes per 32-bit beat.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Iterable

import numpy as np

from .errors import PreprocessError

FASHION_SIZE = 28
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".npy")


def _pil():
    try:
        from PIL import Image, ImageOps
    except ImportError as e:  # pragma: no cover - pillow is a dependency
        raise PreprocessError("Pillow is needed to read image files (pip install pillow)") from e
    return Image, ImageOps


def _array_to_image(a: np.ndarray):
    Image, _ = _pil()
    a = np.asarray(a)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] not in (3, 4)):
        raise PreprocessError(f"array of shape {a.shape}: expected H x W, H x W x 1, H x W x 3 or H x W x 4")
    if a.size == 0:
        raise PreprocessError(f"empty array of shape {a.shape}")
    if a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    elif a.dtype != np.uint8:
        if not np.issubdtype(a.dtype, np.number):
            raise PreprocessError(f"array of dtype {a.dtype} is not an image")
        f = a.astype(np.float64)
        if not np.all(np.isfinite(f)):
            raise PreprocessError("array holds NaN or infinite values")
        if np.issubdtype(a.dtype, np.floating) and f.min() >= 0.0 and f.max() <= 1.0:
            f = f * 255.0
        a = np.clip(np.rint(f), 0, 255).astype(np.uint8)
    if a.ndim == 3 and a.shape[2] == 4:
        a = a[:, :, :3]
    return Image.fromarray(np.ascontiguousarray(a), "L" if a.ndim == 2 else "RGB")


def open_image(src):
    """A path, Pillow image or array -> Pillow image in mode L or RGB."""
    Image, ImageOps = _pil()
    if isinstance(src, (str, Path)):
        p = Path(src)
        if p.suffix.lower() == ".npy":
            try:
                return _array_to_image(np.load(p))
            except (OSError, ValueError) as e:
                raise PreprocessError(f"{p}: cannot read ({e})") from e
        if not p.is_file():
            raise PreprocessError(f"{p}: no such image file")
        try:
            with Image.open(p) as im:
                im.load()
                im = ImageOps.exif_transpose(im)
        except Exception as e:  # noqa: BLE001 - Pillow raises many types
            raise PreprocessError(f"{p}: not an image Pillow can read ({type(e).__name__}: {e})") from e
    elif isinstance(src, Image.Image):
        im = src
    else:
        return _array_to_image(src)
    if im.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        a = np.asarray(im, dtype=np.float64)
        hi = 65535.0 if im.mode.startswith("I;16") or a.max() > 255 else 255.0
        return _array_to_image(np.clip(np.rint(a * 255.0 / hi), 0, 255).astype(np.uint8))
    if im.mode in ("L", "RGB"):
        return im
    if im.mode in ("1", "LA"):
        return im.convert("L")
    return im.convert("RGB")


def content_size(shape, dataset: str = "") -> int | None:
    """The size images are resized to before padding: 28 for Fashion-MNIST networks
    with a larger input, else None (resize to the input size)."""
    s = int(shape[0])
    return FASHION_SIZE if dataset.lower() in ("fashion-mnist", "fashion_mnist", "fmnist") and s > FASHION_SIZE \
        else None


def to_frame(src, shape: tuple[int, int, int], color: str | None = None, invert: bool = False,
             resample: str = "bilinear", content: int | None = None) -> np.ndarray:
    """One image (path, Pillow image or array) -> uint8 H x W x C frame for ``shape``.
    ``content``: resize to ``content x content`` and zero-pad to the input size
    (see :func:`content_size`)."""
    Image, _ = _pil()
    h, w, c = (int(v) for v in shape)
    if h != w:
        raise PreprocessError(f"input shape {shape}: only square inputs are supported")
    color = color or ("gray" if c == 1 else "rgb")
    if (color == "gray") != (c == 1) or c not in (1, 3):
        raise PreprocessError(f"input colour '{color}' does not match {c} channels")
    im = open_image(src)
    im = im.convert("L" if c == 1 else "RGB")
    if content is not None and not 0 < content <= w:
        raise PreprocessError(f"content size {content} does not fit the {w} x {h} input")
    iw, ih = im.size

    def pad(img):
        canvas = Image.new(img.mode, (w, h), 0)
        canvas.paste(img, ((w - img.size[0]) // 2, (h - img.size[1]) // 2))
        return canvas

    if (iw, ih) == (w, h):
        pass
    elif (iw, ih) == (FASHION_SIZE, FASHION_SIZE) and w > FASHION_SIZE:
        im = pad(im)
    else:
        s = min(iw, ih)
        left, top = (iw - s) // 2, (ih - s) // 2
        if (iw, ih) != (s, s):
            im = im.crop((left, top, left + s, top + s))
        filt = {"bilinear": Image.Resampling.BILINEAR, "nearest": Image.Resampling.NEAREST,
                "bicubic": Image.Resampling.BICUBIC, "lanczos": Image.Resampling.LANCZOS,
                "box": Image.Resampling.BOX}.get(resample)
        if filt is None:
            raise PreprocessError(f"unknown resample filter '{resample}'")
        cs = content or w
        if (s, s) != (cs, cs):
            im = im.resize((cs, cs), filt)
        if cs != w:
            im = pad(im)
    a = np.asarray(im, dtype=np.uint8)
    if a.ndim == 2:
        a = a[:, :, None]
    if invert:
        a = 255 - a
    return np.ascontiguousarray(a.reshape(h, w, c))


def to_frames(items, shape: tuple[int, int, int], color: str | None = None, invert: bool = False,
              content: int | None = None) -> np.ndarray:
    """Images or a batch -> uint8 N x H x W x C.

    ``items``: a uint8 N x H x W x C array of frames already in the input
    shape (taken as is); one array/image/path; or a list of them."""
    shape = tuple(int(v) for v in shape)
    if isinstance(items, np.ndarray):
        batch = items.ndim == 4 or (items.ndim == 3 and items.shape[-1] not in (1, 3, 4))  # N x H x W gray
        if not batch:
            return to_frame(items, shape, color, invert, content=content)[None]
        if items.shape[1:] == shape and items.dtype == np.uint8 and not invert:
            return np.ascontiguousarray(items)
        if len(items) == 0:
            return np.zeros((0,) + shape, np.uint8)
        return np.stack([to_frame(x, shape, color, invert, content=content) for x in items])
    if isinstance(items, (str, Path)) or not isinstance(items, Iterable):
        return to_frame(items, shape, color, invert, content=content)[None]
    frames = [to_frame(x, shape, color, invert, content=content) for x in items]
    if not frames:
        return np.zeros((0,) + shape, np.uint8)
    return np.stack(frames)


def expand_inputs(patterns: Iterable[str]) -> list[Path]:
    """Command-line arguments -> image files: a directory (its image files,
    sorted), a glob pattern (sorted matches), or a file."""
    out: list[Path] = []
    for pat in patterns:
        p = Path(pat)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)
            if not files:
                raise PreprocessError(f"{p}: no image files ({', '.join(IMAGE_SUFFIXES)})")
            out += files
        elif any(ch in pat for ch in "*?["):
            files = sorted(Path(f) for f in glob.glob(pat, recursive=True) if Path(f).is_file())
            if not files:
                raise PreprocessError(f"{pat}: no file matches")
            out += files
        else:
            if not p.is_file():
                raise PreprocessError(f"{p}: no such file")
            out.append(p)
    return out
