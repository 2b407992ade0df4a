"""Image-folder datasets (zynqflow.model.folders): layouts and tags (the Makefile's too),
the memory-mapped cache (the host's preprocessing, byte for byte; rebuilt when the folder
changes, reused when not, never half-written), class names and counts, every bad-input
case, a short training that must learn (and fails with scrambled labels), and the full
256x256x3 ZynqNet from a folder through export, golden and C-sim."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from zynqflow.model import folders as F
from zynqflow.model.data import DatasetError, dataset_tag, load_dataset
from zynqflow.spec.paths import REPO


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("ZYNQFLOW_DATA_CACHE", str(d))
    return d


@pytest.fixture(scope="module")
def shapes(tmp_path_factory):
    """train/ + test/ of four shape classes, JPEG/PNG/BMP/WebP, RGB/L/RGBA/P, odd sizes."""
    return F.shapes_folder(tmp_path_factory.mktemp("shapes") / "my shapes", per_class=8, test_per_class=3)


def quiet(*a, **k):
    pass


def load(path, **kw):
    return load_dataset(str(path), None, log=quiet, **kw)


# ---- layouts and tags ----------------------------------------------------------------------
def test_layouts_are_told_apart(tmp_path, shapes):
    (tmp_path / "cifar" / "cifar-10-batches-py").mkdir(parents=True)
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "train-images-idx3-ubyte.gz").write_bytes(b"")
    single = F.shapes_folder(tmp_path / "single", per_class=5, test_per_class=None)
    assert F.detect_layout(tmp_path / "cifar") == "cifar10"
    assert F.detect_layout(tmp_path / "idx") == "idx"
    assert F.detect_layout(shapes) == "split-folders"
    assert F.detect_layout(single) == "class-folders"
    assert dataset_tag(str(tmp_path / "cifar")) == "cifar10" and dataset_tag(str(tmp_path / "idx")) == "fashion-mnist"
    ds = load(shapes, size=16)
    assert "image folders train/<class>/, test/<class>/" in ds.description and "4 classes" in ds.description
    assert ds.class_names == ("circle", "cross", "square", "triangle")
    assert (len(ds.train), len(ds.test), ds.channels) == (32, 12, 3)     # RGB: some images are in colour


def test_tag_is_name_and_path_hash_and_the_makefile_agrees(tmp_path, shapes):
    other = tmp_path / "b" / shapes.name
    other.mkdir(parents=True)
    tag = dataset_tag(str(shapes))
    assert tag.startswith("my_shapes-") and len(tag) == len("my_shapes-") + 8
    assert F.folder_tag(other) != tag                   # same name, another folder: another tag
    for arg in (str(shapes), str(shapes) + "/", "fashion-mnist", "fmnist", "cifar10", "synthetic"):
        if " " in arg:
            continue
        out = subprocess.run(["make", "-s", "--no-print-directory", "data-tag", f"DATA={arg}"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == dataset_tag(arg), arg
    link = tmp_path / "plain_name"
    link.symlink_to(shapes, target_is_directory=True)
    out = subprocess.run(["make", "-s", "--no-print-directory", "data-tag", f"DATA={link}"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == dataset_tag(str(link)) == tag        # a link is the folder it points at


def test_single_folder_split_is_seeded_and_stratified(tmp_path):
    d = F.shapes_folder(tmp_path / "one", per_class=10, test_per_class=None)
    a, b = F.list_folder(d, 0.2), F.list_folder(d, 0.2)
    assert a.files == b.files and len(a.files["test"]) == 8 and len(a.files["train"]) == 32
    assert np.bincount(a.labels["test"]).tolist() == [2, 2, 2, 2]
    assert set(a.files["test"]).isdisjoint(a.files["train"])
    assert F.list_folder(d).split == F.DEFAULT_SPLIT
    with pytest.raises(DatasetError, match="--split applies only"):
        F.list_folder(F.shapes_folder(tmp_path / "two", 2, 1), 0.2)


# ---- the cache: the host's bytes, rebuilt and reused ----------------------------------------------
@pytest.mark.parametrize("shape", [(32, 32, 3), (16, 16, 1)])
def test_cached_pixels_are_the_hosts_bytes(shapes, shape):
    """Every cached frame equals what zynqflow classify sends for the same file (host.preprocess
    frames_for on an export of this dataset), byte for byte."""
    from zynqflow.host.preprocess import frames_for

    ds = load(shapes, size=shape[0], channels=shape[2])
    lst = F.list_folder(shapes)
    export = SimpleNamespace(manifest={"preprocess": ds.recipe}, manifest_path=Path("manifest.json"),
                             dataset=ds.name, input_shape=shape, color="gray" if shape[2] == 1 else "rgb")
    for split in ("train", "test"):
        files = [shapes / r for r in lst.files[split]]
        host = frames_for(export, files)
        assert host.shape == (len(files),) + shape
        assert np.array_equal(getattr(ds, split).hwc(), host), split
        assert getattr(ds, split).labels.tolist() == lst.labels[split]
    assert isinstance(ds.train.images, np.memmap)                  # read memory-mapped, not loaded


def test_cache_is_reused_and_rebuilt_when_the_folder_changes(tmp_path, cache):
    d = F.shapes_folder(tmp_path / "s", per_class=4, test_per_class=2)
    a = load(d, size=16)
    key_a = sorted(p.name for p in (cache / a.name).iterdir() if p.is_dir())
    b = load(d, size=16)
    assert "loaded" in b.description and np.array_equal(a.train.images, b.train.images)
    load(d, size=32)                                               # another shape: its own cache, both kept
    assert len([p for p in (cache / a.name).iterdir() if p.is_dir()]) == 2
    f = d / "train" / "circle" / sorted(os.listdir(d / "train" / "circle"))[0]
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    c = load(d, size=16)
    assert "built" in c.description
    dirs = sorted(p.name for p in (cache / a.name).iterdir() if p.is_dir())
    assert len(dirs) == 2 and key_a[0] not in dirs                  # the stale 16x16 cache is gone


# ---- bad input: clear errors naming the path, no half-written cache ---------------------------
def no_partial_cache(cache: Path) -> None:
    left = [p for p in cache.rglob("*") if p.is_dir() and (".tmp-" in p.name or (p.parent != cache and
                                                                                   not (p / "meta.json").exists()))]
    assert not left, left


def test_truncated_image_is_named_or_skipped_with_skip_bad(tmp_path, cache):
    d = F.shapes_folder(tmp_path / "s", per_class=4, test_per_class=2)
    bad = d / "train" / "square" / "broken.jpg"
    good = next((d / "train" / "circle").glob("*.jpg"))
    bad.write_bytes(good.read_bytes()[:300])
    (d / "train" / "square" / "notes.txt").write_text("not an image")
    with pytest.raises(DatasetError, match="--skip-bad") as e:
        load(d, size=16)
    assert str(bad) in str(e.value)
    no_partial_cache(cache)
    ds = load(d, size=16, skip_bad=True)
    assert len(ds.train) == 16 and "16 train, 8 test images" in ds.description
    assert "1 bad image skipped (1 train)" in ds.description
    assert "1 non-image files ignored" in ds.description


@pytest.mark.parametrize("case", ["empty class", "test class train lacks", "one class", "other layout",
                                  "train without test"])
def test_structural_errors_name_the_path(tmp_path, case, cache):
    d = F.shapes_folder(tmp_path / "s", per_class=2, test_per_class=1)
    if case == "empty class":
        (d / "train" / "hexagon").mkdir()
        (d / "test" / "hexagon").mkdir()
        where, match = d / "train" / "hexagon", "empty class"
    elif case == "test class train lacks":
        (d / "test" / "star").mkdir()
        next((d / "test" / "circle").iterdir()).rename(d / "test" / "star" / "x.png")
        where, match = d / "test" / "star", "not in"
    elif case == "one class":
        d = F.shapes_folder(tmp_path / "one", per_class=3, test_per_class=1, classes=("circle",))
        where, match = d / "train", "at least two"
    elif case == "other layout":
        d = tmp_path / "flat"
        d.mkdir()
        (d / "a.png").write_bytes(b"")
        where, match = d, "not a dataset folder"
    else:
        d = tmp_path / "half"
        (d / "train" / "a").mkdir(parents=True)
        where, match = d, "no test/"
    with pytest.raises(DatasetError, match=match) as e:
        load(d, size=16)
    assert str(where) in str(e.value), e.value
    no_partial_cache(cache)


# ---- class names and counts ------------------------------------------------------------------
def test_class_count_follows_the_data_or_is_refused(tmp_path):
    from zynqflow.model.train import fit_classes
    from zynqflow.spec.topology import get_config

    names = ("a", "b", "c", "d")
    mini = fit_classes(get_config("zynqnet-mini"), names, True, "folder")
    assert mini.num_classes == 4 and mini.class_names == names and mini.layers[-1].cout == 4
    zq = fit_classes(get_config("zynqnet"), names, True, "folder")       # 1024-channel c10 kept, 4 logits
    assert zq.num_classes == 4 and sum(l.cout for l in zq.layers if l.dst == zq.output_tensor) == 1024
    cfg = tmp_path / "net.json"
    cfg.write_text(json.dumps(get_config("zynqnet-tiny").to_dict()))
    with pytest.raises(ValueError, match="num_classes 10, the data .* has 4 classes"):
        fit_classes(get_config(str(cfg)), names, False, "folder")


# ---- it learns -------------------------------------------------------------------------------
LEARN_TOP1 = 0.9    # four shape classes, 16x16x3 zynqnet-tiny, 12 float + 1 QAT epochs: fixed-point top-1


def _learn(tmp_path, folder, monkeypatch=None, scramble=False):
    from zynqflow.model.train import TrainConfig, run

    if scramble:
        real = F.list_folder

        def scrambled(root, split=None):
            lst = real(root, split)
            lst.labels["train"] = np.random.default_rng(0).permutation(lst.labels["train"]).tolist()
            return lst
        monkeypatch.setattr(F, "list_folder", scrambled)
    return run(TrainConfig(net="zynqnet-tiny", data=str(folder), epochs=12, qat_epochs=1, batch_size=32, threads=1,
                           out=str(tmp_path / ("scrambled" if scramble else "run")), calib_images=256, workers=1))


@pytest.fixture(scope="module")
def learnable(tmp_path_factory):
    return F.shapes_folder(tmp_path_factory.mktemp("learn") / "shapes", per_class=150, test_per_class=40, seed=3)


def test_short_training_learns_the_shapes(tmp_path, learnable):
    m = _learn(tmp_path, learnable)
    assert m["fixed_top1"] >= LEARN_TOP1, m
    assert m["class_names"] == ["circle", "cross", "square", "triangle"] and m["dataset"] == dataset_tag(str(learnable))
    import torch

    ck = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    assert list(ck["config"]["class_names"]) == m["class_names"] and ck["dataset"]["recipe"] == {"recipe": "plain"}


def test_scrambled_labels_do_not_learn(tmp_path, learnable, monkeypatch):
    m = _learn(tmp_path, learnable, monkeypatch, scramble=True)
    assert m["fixed_top1"] < 0.5 < LEARN_TOP1, m


# ---- a folder through the flow: export with class names, C-sim; the full 256x256x3 ZynqNet ----------
def test_folder_flow_mini_export_csim(tmp_path, shapes):
    """zynqnet-mini on a folder of JPEG/PNG/...: class count and names follow the folder, export writes the
    test split's vectors and the names, the C-sim is bit-exact with golden on them."""
    from zynqflow.export.exporter import main as export_main
    from zynqflow.host.manifest import Export
    from zynqflow.model.train import TrainConfig, run
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.spec.golden import golden_logits

    run(TrainConfig(net="zynqnet-tiny", data=str(shapes), epochs=1, qat_epochs=1, batch_size=16, threads=1,
                    out=str(tmp_path / "t"), calib_images=16, workers=1))
    assert export_main(["--ckpt", str(tmp_path / "t" / "checkpoint.pt"), "--out", str(tmp_path / "export"),
                        "--vectors", "6"]) == 0
    ex = Export(tmp_path / "export")
    assert ex.class_names == ["circle", "cross", "square", "triangle"] and ex.num_classes == 4
    assert ex.manifest["dataset_source"]["path"] == str(shapes.resolve())
    frames, logits = ex.vectors()
    ds = load(shapes, size=16, channels=3)
    assert np.array_equal(frames, ds.test.subset(6).hwc())          # the test split, as trained
    assert np.array_equal(CSim(ex.dir).run(frames), logits)
    assert np.array_equal(golden_logits(ex.qnet(), frames), logits)


def test_zynqnet_full_resolution_from_a_folder(tmp_path):
    """make train NET=zynqnet DATA=<folder>: 256x256x3 frames from the cache, a few steps, export, one frame
    through golden and the C-sim, bit-exact."""
    from zynqflow.export.exporter import main as export_main
    from zynqflow.host.manifest import Export
    from zynqflow.model.train import TrainConfig, run
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.spec.golden import golden_logits

    d = F.shapes_folder(tmp_path / "big", per_class=2, test_per_class=1, size=(300, 340), classes=SHAPES3)
    m = run(TrainConfig(net="zynqnet", data=str(d), epochs=1, qat_epochs=1, batch_size=3, threads=2,
                        out=str(tmp_path / "t"), calib_images=3, workers=1))
    assert m["train_images"] == 6 and m["class_names"] == sorted(SHAPES3)
    assert export_main(["--ckpt", str(tmp_path / "t" / "checkpoint.pt"), "--out", str(tmp_path / "export"),
                        "--vectors", "1"]) == 0
    ex = Export(tmp_path / "export")
    assert ex.input_shape == (256, 256, 3) and ex.num_classes == 3
    frames, logits = ex.vectors()
    assert np.array_equal(golden_logits(ex.qnet(), frames), logits)
    assert np.array_equal(CSim(ex.dir).run(frames), logits)


SHAPES3 = ("circle", "square", "triangle")


# ---- what the loader says: train-only classes, counts after skipping, unstat-able files -------------
def test_train_only_class_is_named_in_a_warning(tmp_path):
    d = F.shapes_folder(tmp_path / "s", per_class=3, test_per_class=1)
    for f in (d / "test" / "cross").iterdir():
        f.unlink()
    (d / "test" / "cross").rmdir()
    said = []
    ds = load_dataset(str(d), None, size=16, log=said.append)
    assert ds.class_names == ("circle", "cross", "square", "triangle") and len(ds.test) == 3
    warn = [m for m in said if m.startswith("warning:")]
    assert len(warn) == 1 and "1 class in train but not in test: cross" in warn[0] and str(d) in warn[0]
    load_dataset(str(F.shapes_folder(tmp_path / "ok", per_class=3, test_per_class=1)), None, size=16,
                 log=said.append)
    assert len([m for m in said if m.startswith("warning:")]) == 1          # none for a folder with every class


def test_counts_leave_out_skipped_files_and_an_unstatable_file_is_skipped(tmp_path, cache):
    """A symlink loop (stat fails: ELOOP) and a truncated image in train/: without --skip-bad an error naming the
    first; with it both are skipped, and the count says 16 train (not 18) and 2 skipped."""
    d = F.shapes_folder(tmp_path / "s", per_class=4, test_per_class=2)
    loop = d / "train" / "circle" / "loop.png"
    loop.symlink_to(loop.name)
    good = next((d / "train" / "square").glob("*.jpg"))
    (d / "train" / "square" / "broken.jpg").write_bytes(good.read_bytes()[:300])
    with pytest.raises(DatasetError, match="cannot stat .*--skip-bad") as e:
        load(d, size=16)
    assert str(loop) in str(e.value)
    no_partial_cache(cache)
    ds = load(d, size=16, skip_bad=True)
    assert len(ds.train) == 16 and len(ds.test) == 8
    assert ": 4 classes (circle, cross, square, triangle), 16 train, 8 test images;" in ds.description
    assert "2 bad images skipped (2 train)" in ds.description


def test_one_epoch_on_a_class_sorted_folder_is_not_one_class(tmp_path):
    """A CIFAR-style folder of 10 classes, listed class by class (train/<class>/, test/<class>/): --limit-train 20
    and --limit-test 10 took the first images, all of one class, and one epoch scored a fixed top-1 of 1.000. The
    subsets now hold every class (2 train and 1 test image each, recorded in metrics.json with the seed)."""
    from PIL import Image

    from zynqflow.model.train import TrainConfig, run

    names = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
    rng = np.random.default_rng(0)
    for split, n in (("train", 20), ("test", 10)):
        for c, name in enumerate(names):
            (tmp_path / "cifar" / split / name).mkdir(parents=True)
            for i in range(n):
                a = np.clip(rng.normal(25 * c, 40, (8, 8, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(a, "RGB").save(tmp_path / "cifar" / split / name / f"{i:04d}.png")
    m = run(TrainConfig(net="zynqnet-tiny", data=str(tmp_path / "cifar"), epochs=1, qat_epochs=0, batch_size=8,
                        limit_train=20, limit_test=10, seed=5, threads=1, calib_images=20, workers=1,
                        out=str(tmp_path / "run")))
    sub = m["subset"]
    assert sub["seed"] == 5 and sub["train"]["limit"] == 20 and sub["test"]["limit"] == 10
    assert sub["train"]["class_counts"] == {n: 2 for n in names}
    assert sub["test"]["class_counts"] == {n: 1 for n in names}
    assert m["train_images"] == 20 and m["test_images"] == 10
    assert m["fixed_top1"] < 1.0, m
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["subset"] == sub
