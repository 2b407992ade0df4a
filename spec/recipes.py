"""Input preprocessing recipes: how a camera or file frame becomes what the
network was trained on. The exporter records the recipe in the manifest
(``"preprocess"``), and the host (:mod:`zynqflow.host.preprocess`) applies
exactly what the manifest says, so the board and training agree.

``fashion-mnist`` -- the recipe that made Fashion-MNIST (Xiao, Rasul and
Vollgraf 2017, section 2: trim, resize the longest edge to 28, sharpen,
centre on a square canvas, negate, 8-bit gray), for a product on a plain
background:

1. the background colour is the median of the four corner patches
   (``corner`` of the shorter side, at least one pixel);
2. trim the borders: keep the bounding box of the pixels whose RGB distance
   (root mean square over the channels) to the background exceeds
   ``trim_tolerance`` x 255 (5 %, as the dataset); on frames of at least
   3 x ``content`` pixels a 3 x 3 median filter first drops isolated noisy
   pixels;
3. 8-bit gray (ITU-R 601-2 luma), resize the longest edge to ``content``
   (28) with the ``resample`` filter, keeping the aspect ratio;
4. sharpen: unsharp mask, Gaussian radius ``sharpen.radius`` (1.0),
   ``sharpen.percent`` %, ``sharpen.threshold``;
5. levels and negation, with the background found in 1: a light background
   (luma >= 128) maps to ``(bg - p) * 255 / bg`` (negated: the background
   becomes 0, black becomes 255), a dark one to ``(p - bg) * 255 / (255 - bg)``
   (not negated); clipped to 0..255;
6. centred on a black ``content x content`` canvas (an odd margin puts the
   extra pixel left / top, as in the dataset), then zero-padded to the input
   size like the dataset frames (28 -> 32: 2 pixels each side).

``plain`` -- centre-crop to a square, resize (bilinear), zero-pad a
Fashion-MNIST network's 28 x 28 content to its input; see
:mod:`zynqflow.host.preprocess`.

Images already of the input size, and 28 x 28 images for a Fashion-MNIST
network, are dataset frames: both recipes take them as they are (padded).
"""

from __future__ import annotations

FASHION_ALIASES = ("fashion-mnist", "fashion_mnist", "fmnist")
FASHION_SIZE = 28
RECIPES = ("fashion-mnist", "plain")

FASHION_MNIST = {
    "recipe": "fashion-mnist",
    "content": FASHION_SIZE,
    "trim_tolerance": 0.05,
    "corner": 0.02,
    "resample": "box",
    "sharpen": {"radius": 1.0, "percent": 100, "threshold": 0},
    "background": "auto",
}


def is_fashion(dataset: str) -> bool:
    return (dataset or "").lower() in FASHION_ALIASES


def default_recipe(dataset: str, input_shape) -> dict:
    """The manifest's ``preprocess`` entry for a network trained on ``dataset``
    with input ``H x W x C``: the Fashion-MNIST recipe for gray Fashion-MNIST
    networks whose input holds the 28 x 28 content, else ``plain``."""
    h, w, c = (int(v) for v in input_shape)
    if is_fashion(dataset) and c == 1 and h == w >= FASHION_SIZE:
        return {**FASHION_MNIST, "sharpen": dict(FASHION_MNIST["sharpen"])}
    return {"recipe": "plain"}
