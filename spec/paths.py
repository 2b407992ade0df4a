"""Where the repository is (for files that live in a checkout: rtl/, hls/,
bitstreams/, build/). Torch-free; on a board the package has no checkout
around it and callers fall back to paths beside the manifest."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build"
