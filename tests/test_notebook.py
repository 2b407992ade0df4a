"""The board notebook (notebooks/zynqflow_pynq_z2.ipynb, installed by board/deploy.sh) runs
unchanged against the RTL simulation: ZYNQFLOW_BACKEND=rtl makes ZqOverlay(...) the board
driver on the Verilator RTL. Executed with nbclient; its JSON outputs must hold exactly the
golden model's logits for the images it classified and the frames it streamed. The committed
notebook carries the outputs of such a run (make notebook): pictures, top-k bars, throughput,
latency and CPU-versus-accelerator plots, labelled as simulation, and no cell whose only output
is JSON (classic Notebook shows "No renderer" for it).

The reference zynqnet-mini export (Fashion-MNIST) when its checkpoint is here, else the
random-weight zynqnet-tiny; a few frames each, so that this takes well under a minute.
"""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from zynqflow.bench.notebook import reference_export
from zynqflow.host import Accelerator
from zynqflow.host.manifest import REPO, Export
from zynqflow.spec.golden import golden_logits

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
try:
    from zynqflow.sim.rtl.runner import RtlUnavailable, SimBuild
except ImportError as e:  # pragma: no cover
    pytest.skip(f"zynqflow.sim unavailable: {e}", allow_module_level=True)

NOTEBOOK = REPO / "notebooks" / "zynqflow_pynq_z2.ipynb"
N_IMAGES, N_STREAM = 3, 4


def _export() -> Export:
    """The export the notebook runs on (the committed reference, else a random zynqnet-tiny)."""
    return reference_export()


def _json_outputs(nb) -> list[dict]:
    return [o["data"]["application/json"] for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if "application/json" in o.get("data", {})]


def test_notebook_runs_on_rtl(tmp_path, monkeypatch):
    ex = _export()
    try:
        SimBuild(ex.dir).build()
    except RtlUnavailable as e:
        pytest.skip(str(e))
    # a folder of images as a user would have: the export's test frames, saved as PNG
    images = tmp_path / "images"
    images.mkdir()
    vec, _ = ex.vectors()
    files = []
    for i, f in enumerate(vec[:N_IMAGES]):
        files.append(images / f"img{i}.png")
        Image.fromarray(f[..., 0] if f.shape[2] == 1 else f).save(files[-1])
    for k, v in dict(ZYNQFLOW_BACKEND="rtl", ZYNQFLOW_EXPORT=str(ex.dir), ZYNQFLOW_IMAGES=str(images),
                     ZYNQFLOW_BITFILE=f"{ex.network}_pynq-z2.bit", ZYNQFLOW_STREAM_FRAMES=str(N_STREAM),
                     ZYNQFLOW_IMAGES_MAX=str(N_IMAGES)).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("ZYNQFLOW_LIB", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=240, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    classified, streamed = _json_outputs(nb)
    # the images: what the board driver got back through the RTL == the golden model on the same files
    gold = Accelerator(ex, "golden").classify(files)
    assert classified["backend"] == "rtl" and classified["network"] == ex.network
    assert classified["files"] == [f.name for f in files]
    assert np.array_equal(np.array(classified["logits"]), gold.logits) and classified["golden_equal"] is True
    assert classified["labels"] == gold.names
    # the stream: in order, bit-exact, labelled as simulated accelerator-only figures
    batch = vec[np.arange(N_STREAM) % len(vec)]
    assert streamed["frames"] == N_STREAM and streamed["golden_equal"] is True
    assert np.array_equal(np.array(streamed["first_logits"]), golden_logits(ex.qnet(), batch))
    assert "accelerator only" in streamed["timing"] and "simulated" in streamed["clock"]
    tp = streamed["throughput"]
    assert tp["fps_accelerator_only"] == pytest.approx(streamed["fps"])
    assert tp["fps_accelerator_only"] > tp["fps_including_host"] > 0 and streamed["host_seconds_per_frame"] > 0
    assert streamed["cycles_from"] == "measured (RTL twin), RTL simulation" and streamed["cycles_per_frame"] > 0
    assert streamed["dram_rd_bytes_per_frame"] is not None
    # the pictures with their top-k bars, and the throughput/latency plots
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "image/png" in o.get("data", {})]
    assert len(pngs) == 3                     # pictures + top-k bars, latency/throughput, CPU vs accelerator
    _check_outputs(nb)


def _check_outputs(nb) -> None:
    """Every output renders in any front end, and the figures say they come from the simulation. The
    latency plot says why a streamed frame takes two frame times (it waits for the frame before it),
    beside a frame alone; the CPU-versus-accelerator cell computes no speed-up off the board (numpy on
    this machine against simulated time: different machines and clocks)."""
    import re

    outs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    for o in outs:
        data = o.get("data", {})
        assert not (data and set(data) <= {"application/json"}), f"an output with JSON only: {o}"
        assert o.get("output_type") != "error", o
    text = "".join(o.get("text", "") for o in outs) + "".join(o.get("data", {}).get("text/plain", "") for o in outs)
    assert "RTL SIMULATION" in text and "not a board measurement" in text
    assert "CPU (numpy golden model) on this machine" in text and "not the board's Cortex-A9" in text
    assert "no speed-up is computed" in text and not re.search(r"speed-up \d", text)
    assert "waits for the frame before it" in text and "one frame alone:" in text
    ratio = float(re.search(r"stream latency / frame time = ([0-9.]+)", text).group(1))
    assert 1.5 < ratio < 2.5                      # about two frame times: queued behind the frame before it


def test_committed_notebook_has_outputs():
    """The committed notebook shows what a run gives without running it: image/png outputs, the
    simulation label, text beside every JSON output, and golden-equal logits recorded."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    pngs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "image/png" in o.get("data", {})]
    assert len(pngs) >= 3, "run `make notebook` to commit the notebook with its outputs"
    _check_outputs(nb)
    classified, streamed = _json_outputs(nb)
    assert classified["golden_equal"] is True and streamed["golden_equal"] is True
    assert classified["backend"] == "rtl" and "simulated" in streamed["clock"]
