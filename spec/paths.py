"""Where the repository is (for files that live in a checkout: rtl/, hls/,
bitstreams/, build/). Torch-free; on a board the package has no checkout
around it and callers fall back to paths beside the manifest."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build"


@contextmanager
def file_lock(path: Path | str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) while the block runs: processes
    (test workers, benches, people) that make or use the same cache entry take turns."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def repo_relative(path) -> str:
    """``path`` relative to the checkout when it is a path inside it, else as given (a preset or
    dataset name, a path elsewhere): what files that may be committed (metrics, reports) record,
    so that no developer machine's directory lands in git."""
    p = Path(path)
    if not p.is_absolute() and not p.exists():
        return str(path)            # a name, not a path here
    try:
        return p.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)
