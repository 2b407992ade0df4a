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
   * anything else, by the manifest's recipe (``"preprocess"``, written by the
     exporter; :mod:`zynqflow.spec.recipes`; an older manifest without it gets
     the default for its dataset):

     - ``fashion-mnist`` (the default for gray Fashion-MNIST networks): the
       recipe that made the dataset, for a product photographed on a plain
       light or dark background -- trim the borders of the corner colour,
       resize the longest edge to 28, sharpen, centre on a 28 x 28 canvas,
       negate a light background (levels: the background becomes 0), 8-bit
       gray, zero-pad to ``S x S``; see :func:`fashion_content`;
     - ``plain``: centre-cropped to a square (the shorter side), then resized
       with Pillow's bilinear filter (antialiased when shrinking) to ``S x S``
       -- or, for a network trained on Fashion-MNIST (manifest ``dataset`` =
       ``fashion-mnist``, ``S > 28``), to 28 x 28 and then zero-padded to
       ``S x S`` like the dataset.
4. Optional ``invert`` (255 - p) as the last step, for dark-on-light images
   fed through the ``plain`` recipe to a network trained on light-on-dark
   images (the ``fashion-mnist`` recipe detects the background itself).

The result is a contiguous uint8 ``S x S x C`` array, which the DMA sends row
by row, pixel by pixel, channel by channel (HWC), four bytes per 32-bit beat.

Works with Pillow 6 or later (PYNQ images take Pillow from the distribution:
Ubuntu 22.04 ships 9.0, before ``Image.Resampling``).
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Iterable

import numpy as np

from zynqflow.spec.recipes import FASHION_MNIST, FASHION_SIZE, RECIPES, default_recipe, is_fashion

from .errors import ExportFilesError, PreprocessError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".npy")


def _pil():
    try:
        from PIL import Image, ImageOps
    except ImportError as e:  # pragma: no cover - pillow is a dependency
        raise PreprocessError("Pillow is needed to read image files (pip install pillow)") from e
    return Image, ImageOps


_FILTERS = {"bilinear": "BILINEAR", "nearest": "NEAREST", "bicubic": "BICUBIC", "lanczos": "LANCZOS", "box": "BOX"}


def resample_filter(name: str):
    """Pillow's resampling filter by name: ``Image.Resampling.X`` on Pillow >= 9.1,
    the module constant ``Image.X`` on older Pillow (which has no ``Resampling``)."""
    Image, _ = _pil()
    key = _FILTERS.get(name)
    if key is None:
        raise PreprocessError(f"unknown resample filter '{name}' ({', '.join(_FILTERS)})")
    return getattr(getattr(Image, "Resampling", Image), key)


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
    return FASHION_SIZE if is_fashion(dataset) and s > FASHION_SIZE else None


# ---- the Fashion-MNIST recipe ------------------------------------------------------------
_WORK_EDGE = 1024   # larger frames are box-filtered to this longest edge first (memory on the board)


def check_recipe(raw, shape, where: str = "preprocess") -> dict:
    """A manifest's ``preprocess`` entry, completed with the defaults of its recipe and
    checked; raises :class:`PreprocessError` naming ``where`` and the field."""
    if not isinstance(raw, dict) or raw.get("recipe") not in RECIPES:
        got = raw.get("recipe") if isinstance(raw, dict) else raw
        raise PreprocessError(f"{where}: recipe {got!r} is not one of {', '.join(RECIPES)}")
    if raw["recipe"] == "plain":
        extra = sorted(set(raw) - {"recipe"})
        if extra:
            raise PreprocessError(f"{where}: unknown field '{extra[0]}' for the plain recipe")
        return {"recipe": "plain"}
    unknown = sorted(set(raw) - set(FASHION_MNIST))
    if unknown:
        raise PreprocessError(f"{where}: unknown field '{unknown[0]}' (fields: {', '.join(FASHION_MNIST)})")
    sharpen = raw.get("sharpen", {})
    if not isinstance(sharpen, dict):
        raise PreprocessError(f"{where}: sharpen = {sharpen!r} must be an object (radius, percent, threshold)")
    unknown = sorted(set(sharpen) - set(FASHION_MNIST["sharpen"]))
    if unknown:
        raise PreprocessError(f"{where}: unknown field 'sharpen.{unknown[0]}' (radius, percent, threshold)")
    r = {**FASHION_MNIST, **raw, "sharpen": {**FASHION_MNIST["sharpen"], **sharpen}}
    h, w, c = (int(v) for v in shape)
    if c != 1:
        raise PreprocessError(f"{where}: the fashion-mnist recipe makes gray frames, the input has {c} channels")

    def number(v, lo, hi, integer=False):
        ok = not isinstance(v, bool) and isinstance(v, int if integer else (int, float))
        return ok and lo <= v <= hi
    checks = [("content", r["content"], number(r["content"], 1, w, True), f"an integer in 1..{w} (the input size)"),
              ("trim_tolerance", r["trim_tolerance"], number(r["trim_tolerance"], 0, 0.999), "a number in [0, 1)"),
              ("corner", r["corner"], number(r["corner"], 0, 0.5), "a number in [0, 0.5]"),
              ("resample", r["resample"], r["resample"] in _FILTERS, f"one of {', '.join(_FILTERS)}"),
              ("background", r["background"], r["background"] in ("auto", "light", "dark"), "auto, light or dark")]
    checks += [(f"sharpen.{k}", v, number(v, 0, 1e9), "a number >= 0") for k, v in r["sharpen"].items()]
    for field, value, ok, want in checks:
        if not ok:
            raise PreprocessError(f"{where}: {field} = {value!r} must be {want}")
    return r


def _luma(rgb) -> float:
    rgb = np.atleast_1d(np.asarray(rgb, np.float64))
    return float(rgb[0]) if rgb.size == 1 else float(rgb[0] * 0.299 + rgb[1] * 0.587 + rgb[2] * 0.114)


def fashion_content(src, recipe: dict = FASHION_MNIST) -> np.ndarray:
    """The Fashion-MNIST recipe (:mod:`zynqflow.spec.recipes`) on one image: uint8
    ``content x content`` (28 x 28), object centred, background 0, object bright.
    An image with nothing but background gives a black frame."""
    from PIL import ImageFilter

    Image, _ = _pil()
    im = open_image(src)
    size = int(recipe["content"])
    if max(im.size) > _WORK_EDGE:
        f = _WORK_EDGE / max(im.size)
        im = im.resize((max(1, round(im.size[0] * f)), max(1, round(im.size[1] * f))), resample_filter("box"))
    a = np.asarray(im, np.float64)
    a = a[:, :, None] if a.ndim == 2 else a
    h, w = a.shape[:2]
    k = max(1, int(round(min(h, w) * float(recipe["corner"]))))
    corners = np.concatenate([a[:k, :k], a[:k, -k:], a[-k:, :k], a[-k:, -k:]]).reshape(-1, a.shape[2])
    bg = np.median(corners, axis=0)
    # 1-2: trim the borders of the corner colour (RMS distance over the channels)
    dist = np.sqrt(np.mean((a - bg) ** 2, axis=2))
    far = Image.fromarray(np.where(dist > float(recipe["trim_tolerance"]) * 255.0, 255, 0).astype(np.uint8), "L")
    if min(h, w) >= 3 * size:     # >= 3 source pixels per output pixel: single noisy pixels do not count
        far = far.filter(ImageFilter.MedianFilter(3))
    mask = np.asarray(far) > 0
    if not mask.any():
        return np.zeros((size, size), np.uint8)
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    obj = im.crop((int(left), int(top), int(right), int(bottom))).convert("L")
    # 3: the longest edge to `size`, aspect kept
    ow, oh = obj.size
    nw, nh = (size, max(1, round(oh * size / ow))) if ow >= oh else (max(1, round(ow * size / oh)), size)
    if (nw, nh) != (ow, oh):
        obj = obj.resize((nw, nh), resample_filter(recipe["resample"]))
    # 4: sharpen
    sh = recipe["sharpen"]
    if sh["percent"] > 0:
        obj = obj.filter(ImageFilter.UnsharpMask(radius=float(sh["radius"]), percent=int(round(sh["percent"])),
                                                 threshold=int(sh["threshold"])))
    # 5: levels: the background becomes 0; a light background is negated
    p = np.asarray(obj, np.float64)
    b = _luma(bg)
    light = b >= 128 if recipe["background"] == "auto" else recipe["background"] == "light"
    if light:
        p = (b - p) * 255.0 / max(b, 1.0)
    else:
        p = (p - b) * 255.0 / max(255.0 - b, 1.0)
    # 6: centred on a black square canvas (odd margins: the extra pixel left / top)
    out = np.zeros((size, size), np.uint8)
    y0, x0 = (size - nh + 1) // 2, (size - nw + 1) // 2
    out[y0:y0 + nh, x0:x0 + nw] = np.clip(np.rint(p), 0, 255).astype(np.uint8)
    return out


def recipe_for(export, recipe: str | None = "auto") -> dict:
    """The preprocessing recipe for an export: ``auto`` (the manifest's ``preprocess``,
    else the default for its dataset), ``plain`` or ``fashion-mnist``."""
    where = f"{export.manifest_path}: preprocess"
    raw = export.manifest.get("preprocess")
    try:
        if recipe in (None, "auto"):
            if raw is None:
                return default_recipe(export.dataset, export.input_shape)
            return check_recipe(raw, export.input_shape, where)
        if recipe == "plain":
            return {"recipe": "plain"}
        if recipe == "fashion-mnist":
            given = raw if isinstance(raw, dict) and raw.get("recipe") == "fashion-mnist" else {"recipe": recipe}
            return check_recipe(given, export.input_shape, where)
    except PreprocessError as e:
        if raw is not None and str(e).startswith(where):
            raise ExportFilesError(str(e)) from e
        raise
    raise PreprocessError(f"unknown preprocessing recipe '{recipe}' (auto, {', '.join(RECIPES)})")


def frames_for(export, items, invert: bool = False, recipe: str | None = "auto") -> np.ndarray:
    """Images / arrays / frames -> uint8 N x H x W x C for an export, by its recipe
    (:func:`recipe_for`)."""
    r = recipe_for(export, recipe)
    return to_frames(items, export.input_shape, export.color, invert,
                     content=content_size(export.input_shape, export.dataset), recipe=r)


def to_frame(src, shape: tuple[int, int, int], color: str | None = None, invert: bool = False,
             resample: str = "bilinear", content: int | None = None, recipe: dict | None = None) -> np.ndarray:
    """One image (path, Pillow image or array) -> uint8 H x W x C frame for ``shape``.
    ``content``: resize to ``content x content`` and zero-pad to the input size
    (see :func:`content_size`). ``recipe``: a checked ``preprocess`` entry
    (:func:`check_recipe`); ``fashion-mnist`` applies :func:`fashion_content` to
    images that are neither ``H x W`` nor 28 x 28; None or ``plain``: the plain path."""
    Image, _ = _pil()
    h, w, c = (int(v) for v in shape)
    if h != w:
        raise PreprocessError(f"input shape {shape}: only square inputs are supported")
    color = color or ("gray" if c == 1 else "rgb")
    if (color == "gray") != (c == 1) or c not in (1, 3):
        raise PreprocessError(f"input colour '{color}' does not match {c} channels")
    original = open_image(src)
    im = original.convert("L" if c == 1 else "RGB")
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
    elif recipe is not None and recipe.get("recipe") == "fashion-mnist":
        if c != 1:
            raise PreprocessError(f"the fashion-mnist recipe makes gray frames, the input has {c} channels")
        im = pad(Image.fromarray(fashion_content(original, recipe), "L"))
    else:
        s = min(iw, ih)
        left, top = (iw - s) // 2, (ih - s) // 2
        if (iw, ih) != (s, s):
            im = im.crop((left, top, left + s, top + s))
        filt = resample_filter(resample)
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
              content: int | None = None, recipe: dict | None = None) -> np.ndarray:
    """Images or a batch -> uint8 N x H x W x C.

    ``items``: a uint8 N x H x W x C array of frames already in the input
    shape (taken as is); one array/image/path; or a list of them."""
    shape = tuple(int(v) for v in shape)

    def one(x):
        return to_frame(x, shape, color, invert, content=content, recipe=recipe)
    if isinstance(items, np.ndarray):
        batch = items.ndim == 4 or (items.ndim == 3 and items.shape[-1] not in (1, 3, 4))  # N x H x W gray
        if not batch:
            return one(items)[None]
        if items.shape[1:] == shape and items.dtype == np.uint8 and not invert:
            return np.ascontiguousarray(items)
        if len(items) == 0:
            return np.zeros((0,) + shape, np.uint8)
        return np.stack([one(x) for x in items])
    if isinstance(items, (str, Path)) or not isinstance(items, Iterable):
        return one(items)[None]
    frames = [one(x) for x in items]
    if not frames:
        return np.zeros((0,) + shape, np.uint8)
    return np.stack(frames)


def expand_inputs(patterns: Iterable[str]) -> list[Path]:
    """Command-line arguments -> image files: a directory (its image files,
    sorted), a glob pattern (sorted matches), or a file."""
    out: list[Path] = []
    for pat in patterns:
        p = Path(pat)
        try:
            is_dir = p.is_dir()
        except OSError as e:                # a directory above it the user may not enter
            raise PreprocessError(f"{pat}: {e.strerror}") from e
        if is_dir:
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
