"""``make notebook``: run the board notebook (``notebooks/zynqflow_pynq_z2.ipynb``) against the RTL
simulation and save it with its outputs (pictures, top-k bars, throughput and latency plots, the
CPU-versus-accelerator cell), every figure labelled as simulation.

The export: the reference zynqnet-mini (Fashion-MNIST) when its checkpoint is here, else the
random-weight zynqnet-tiny. Images: the export's test vectors, written by the notebook itself into
``images/`` of a scratch directory.

    python -m zynqflow.bench.notebook [--out notebooks/zynqflow_pynq_z2.ipynb] [--images 6] [--stream 64]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from zynqflow.spec.paths import REPO

NOTEBOOK = REPO / "notebooks" / "zynqflow_pynq_z2.ipynb"


def reference_export():
    from zynqflow.export import fixtures as exports
    from zynqflow.host.manifest import Export

    if exports.REFERENCE_CKPT.exists():
        try:
            return Export(exports.checkpoint_export(exports.REFERENCE_CKPT, frames=8)[0])
        except ImportError:                 # no torch to export it: the random network
            pass
    return Export(exports.random_export("zynqnet-tiny", seed=0, vectors=16))


def run(notebook: Path = NOTEBOOK, out: Path | None = None, export=None, images: int = 6, stream: int = 64,
        timeout: int = 600, workdir: Path | None = None):
    """Execute ``notebook`` on the rtl backend; returns the executed notebook (written to ``out``)."""
    import nbclient
    import nbformat

    from zynqflow.sim.rtl.runner import SimBuild

    ex = export or reference_export()
    SimBuild(ex.dir).build()
    env = dict(ZYNQFLOW_BACKEND="rtl", ZYNQFLOW_EXPORT=str(ex.dir), ZYNQFLOW_BITFILE=f"{ex.network}_pynq-z2.bit",
               ZYNQFLOW_STREAM_FRAMES=str(stream), ZYNQFLOW_IMAGES_MAX=str(images))
    old = {k: os.environ.get(k) for k in [*env, "ZYNQFLOW_LIB", "ZYNQFLOW_IMAGES"]}
    os.environ.update(env)
    for k in ("ZYNQFLOW_LIB", "ZYNQFLOW_IMAGES"):
        os.environ.pop(k, None)
    nb = nbformat.read(notebook, as_version=4)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            wd = Path(workdir or tmp)
            nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                    resources={"metadata": {"path": str(wd)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for c in nb.cells:                       # no volatile execution metadata in the committed file
        c.metadata.pop("execution", None)
    if out is not None:
        nbformat.write(nb, out)
    return nb


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=NOTEBOOK)
    p.add_argument("--images", type=int, default=6)
    p.add_argument("--stream", type=int, default=64)
    a = p.parse_args(argv)
    print(f"notebook: running {NOTEBOOK.relative_to(REPO)} against the RTL simulation ...", file=sys.stderr)
    run(out=a.out, images=a.images, stream=a.stream)
    print(f"notebook: outputs saved in {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
