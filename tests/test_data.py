"""Dataset loaders: IDX (Fashion-MNIST), CIFAR-10 pickles, synthetic data,
padding and augmentation. Everything but the one real-data test runs on tiny
files written to tmp_path."""

from __future__ import annotations

import gzip
import pickle
import struct
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import torch

from zynqflow.model import data as D
from zynqflow.model.data import (DatasetError, augment, fashion_mnist_dir, load_cifar10, load_dataset,
                                 load_fashion_mnist, load_idx_split, pad_to, read_idx, synthetic)

IMG, LBL = "imgs-idx3-ubyte", "lbls-idx1-ubyte"


# ---- helpers -------------------------------------------------------------------
def idx_bytes(arr: np.ndarray) -> bytes:
    arr = np.asarray(arr, dtype=np.uint8)
    return struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.tobytes()


def write_idx(path: Path, arr: np.ndarray, gz: bool) -> Path:
    raw = idx_bytes(arr)
    if gz:
        path = path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(raw))
    else:
        path.write_bytes(raw)
    return path


def tiny_images(n: int = 5, h: int = 28, w: int = 28, seed: int = 0) -> np.ndarray:
    # strictly positive pixels, so the zero padding is distinguishable from data
    return np.random.default_rng(seed).integers(1, 256, (n, h, w), dtype=np.uint8)


@contextmanager
def raises_naming(path, match: str | None = None):
    """A DatasetError whose message contains ``str(path)`` (and ``match``)."""
    with pytest.raises(DatasetError, match=match) as info:
        yield info
    assert str(path) in str(info.value), f"{path} not named in: {info.value}"


# ---- IDX: good files -----------------------------------------------------------
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_roundtrip(tmp_path, gz):
    imgs = tiny_images(3, 4, 5)
    p = write_idx(tmp_path / IMG, imgs, gz)
    got = read_idx(p, 3)
    assert got.dtype == np.uint8 and got.shape == (3, 4, 5)
    np.testing.assert_array_equal(got, imgs)
    got.flags.writeable = True  # a copy, not a view of the file buffer
    got[0, 0, 0] ^= 1


@pytest.mark.parametrize("gz", [False, True])
def test_load_idx_split_pads_centred(tmp_path, gz):
    imgs = tiny_images(5)
    labels = np.array([0, 9, 3, 3, 7], np.uint8)
    write_idx(tmp_path / IMG, imgs, gz)
    write_idx(tmp_path / LBL, labels, gz)
    s = load_idx_split(tmp_path, IMG, LBL)
    assert s.images.shape == (5, 1, 32, 32) and s.images.dtype == np.uint8
    assert s.labels.dtype == np.int64
    np.testing.assert_array_equal(s.labels, [0, 9, 3, 3, 7])
    # 28 -> 32: two zero rows/cols on every side, data at [2:30, 2:30]
    np.testing.assert_array_equal(s.images[:, 0, 2:30, 2:30], imgs)
    assert s.images[:, :, :2, :].max() == 0 and s.images[:, :, 30:, :].max() == 0
    assert s.images[:, :, :, :2].max() == 0 and s.images[:, :, :, 30:].max() == 0
    assert s.images[3, 0, 2, 2] == imgs[3, 0, 0] and s.images[3, 0, 29, 29] == imgs[3, 27, 27]
    assert s.images[3, 0, 1, 2] == 0 and s.images[3, 0, 2, 1] == 0 and s.images[3, 0, 30, 29] == 0
    assert len(s) == 5 and len(s.subset(2)) == 2
    assert s.hwc().shape == (5, 32, 32, 1)


def test_pad_to_exact_positions():
    x = np.arange(1, 2 * 3 * 3 + 1, dtype=np.uint8).reshape(1, 2, 3, 3)
    y = pad_to(x, 8)  # top = left = (8 - 3) // 2 = 2
    assert y.shape == (1, 2, 8, 8)
    np.testing.assert_array_equal(y[:, :, 2:5, 2:5], x)
    assert int(y.sum()) == int(x.astype(int).sum())
    assert pad_to(x, 3) is not x and np.array_equal(pad_to(x, 3), x)
    with pytest.raises(ValueError):
        pad_to(x, 2)


def test_fashion_dir_and_loader_from_data_dir(tmp_path, monkeypatch):
    # hide the Debian copy so the explicit directory is the only candidate
    monkeypatch.setattr(D, "DEBIAN_FASHION_DIR", tmp_path / "no-debian")
    tr, te = tiny_images(6, seed=1), tiny_images(4, seed=2)
    write_idx(tmp_path / "train-images-idx3-ubyte", tr, gz=True)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.arange(6) % 10, gz=True)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", te, gz=False)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", [1, 2, 3, 4], gz=False)
    assert fashion_mnist_dir(tmp_path, download=False) == tmp_path
    ds = load_fashion_mnist(tmp_path)
    assert ds.name == "fashion-mnist" and ds.channels == 1 and ds.size == 32
    assert len(ds.train) == 6 and len(ds.test) == 4
    np.testing.assert_array_equal(ds.train.images[:, 0, 2:30, 2:30], tr)
    np.testing.assert_array_equal(ds.test.labels, [1, 2, 3, 4])
    assert ds.class_names[0] == "T-shirt/top" and len(ds.class_names) == 10


def test_fashion_dir_not_found_no_download(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "DEBIAN_FASHION_DIR", tmp_path / "no-debian")
    empty = tmp_path / "empty"
    empty.mkdir()
    with raises_naming(empty, match="not found"):
        fashion_mnist_dir(empty, download=False)


def _fake_fashion(d: Path, seed: int, n_train: int = 6, n_test: int = 4, gz: bool = True) -> tuple:
    d.mkdir(parents=True, exist_ok=True)
    tr, te = tiny_images(n_train, seed=seed), tiny_images(n_test, seed=seed + 1)
    write_idx(d / "train-images-idx3-ubyte", tr, gz)
    write_idx(d / "train-labels-idx1-ubyte", np.arange(n_train) % 10, gz)
    write_idx(d / "t10k-images-idx3-ubyte", te, gz)
    write_idx(d / "t10k-labels-idx1-ubyte", np.arange(n_test) % 10, gz)
    return tr, te


def test_explicit_data_dir_wins_over_debian_package(tmp_path, monkeypatch):
    """DATA_DIR must be what is loaded, even when the Debian package is installed."""
    debian, mine = tmp_path / "debian", tmp_path / "mine"
    _fake_fashion(debian, seed=10)
    tr, te = _fake_fashion(mine, seed=20, n_train=7, n_test=3, gz=False)
    monkeypatch.setattr(D, "DEBIAN_FASHION_DIR", debian)
    assert fashion_mnist_dir(None, download=False) == debian            # no DATA_DIR: the package
    assert fashion_mnist_dir(mine, download=False) == mine
    ds = load_dataset("fashion-mnist", str(mine))
    assert len(ds.train) == 7 and len(ds.test) == 3
    np.testing.assert_array_equal(ds.train.images[:, 0, 2:30, 2:30], tr)
    np.testing.assert_array_equal(ds.test.images[:, 0, 2:30, 2:30], te)
    # a DATA_DIR without the files is an error naming it, not a silent fall-back to the package
    empty = tmp_path / "empty"
    empty.mkdir()
    with raises_naming(empty, match="lacks train-images-idx3-ubyte"):
        fashion_mnist_dir(empty, download=False)
    (tmp_path / "afile").write_text("x")
    with raises_naming(tmp_path / "afile", match="not a directory"):
        fashion_mnist_dir(tmp_path / "afile", download=False)


@pytest.mark.parametrize("gz", [False, True])
def test_truncated_file_in_data_dir_raises(tmp_path, monkeypatch, gz):
    """The regression: a DATA_DIR whose test-image file was cut in half loaded the
    Debian package's files without an error."""
    debian, mine = tmp_path / "debian", tmp_path / "mine"
    _fake_fashion(debian, seed=10)
    _fake_fashion(mine, seed=20, gz=gz)
    monkeypatch.setattr(D, "DEBIAN_FASHION_DIR", debian)
    p = mine / ("t10k-images-idx3-ubyte" + (".gz" if gz else ""))
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with raises_naming(p, match="truncated"):
        load_fashion_mnist(mine)
    with raises_naming(p, match="truncated"):
        load_dataset("fashion-mnist", str(mine))


def test_wrong_image_size_in_data_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "DEBIAN_FASHION_DIR", tmp_path / "no-debian")
    _fake_fashion(tmp_path, seed=1)
    p = write_idx(tmp_path / "t10k-images-idx3-ubyte", tiny_images(4, 20, 20), gz=True)
    with raises_naming(p, match="images are 20 x 20, expected 28 x 28"):
        load_fashion_mnist(tmp_path)


@pytest.mark.skipif(not D.DEBIAN_FASHION_DIR.is_dir(), reason="dataset-fashion-mnist not installed")
def test_truncated_copy_of_the_real_test_images(tmp_path):
    """With the Debian package installed: a DATA_DIR holding the real files, the test
    images cut in half, raises naming that file."""
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-labels-idx1-ubyte"):
        src = D._find_idx(D.DEBIAN_FASHION_DIR, stem)
        (tmp_path / src.name).symlink_to(src)
    src = D._find_idx(D.DEBIAN_FASHION_DIR, "t10k-images-idx3-ubyte")
    cut = tmp_path / src.name
    cut.write_bytes(src.read_bytes()[: src.stat().st_size // 2])
    with raises_naming(cut, match="truncated"):
        load_dataset("fashion-mnist", str(tmp_path))


# ---- IDX: errors must name the file ----------------------------------------------
@pytest.mark.parametrize("gz", [False, True])
def test_bad_magic(tmp_path, gz):
    raw = bytearray(idx_bytes(tiny_images(2, 3, 3)))
    raw[2] = 0x0D  # float IDX, not unsigned byte
    p = tmp_path / (IMG + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(bytes(raw)) if gz else bytes(raw))
    with raises_naming(p, match="magic"):
        read_idx(p, 3)


def test_wrong_dimension_count(tmp_path):
    p = write_idx(tmp_path / LBL, tiny_images(2, 3, 3), gz=False)
    with raises_naming(p, match="3 dimensions, expected 1"):
        read_idx(p, 1)


@pytest.mark.parametrize("gz", [False, True])
def test_truncated_data(tmp_path, gz):
    raw = idx_bytes(tiny_images(2, 3, 3))[:-1]
    p = tmp_path / (IMG + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(raw) if gz else raw)
    with raises_naming(p, match="truncated") as e:
        read_idx(p, 3)
    assert "18 bytes" in str(e.value) and "holds 17" in str(e.value)


def test_truncated_header(tmp_path):
    p = tmp_path / IMG
    p.write_bytes(idx_bytes(tiny_images(2, 3, 3))[:10])  # magic + 1.5 dims
    with raises_naming(p, match="truncated header"):
        read_idx(p, 3)
    p.write_bytes(b"\x00\x00")
    with raises_naming(p, match="truncated header"):
        read_idx(p, 3)


@pytest.mark.parametrize("gz", [False, True])
def test_trailing_bytes(tmp_path, gz):
    raw = idx_bytes(tiny_images(2, 3, 3)) + b"\x00\x01\x02"
    p = tmp_path / (IMG + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(raw) if gz else raw)
    with raises_naming(p, match="3 unexpected trailing bytes"):
        read_idx(p, 3)


def test_count_mismatch(tmp_path):
    ip = write_idx(tmp_path / IMG, tiny_images(3), gz=False)
    lp = write_idx(tmp_path / LBL, [1, 2], gz=True)
    with raises_naming(ip, match="3 images") as e:
        load_idx_split(tmp_path, IMG, LBL)
    assert str(lp) in str(e.value) and "2 labels" in str(e.value)


def test_label_out_of_range(tmp_path):
    write_idx(tmp_path / IMG, tiny_images(3), gz=False)
    lp = write_idx(tmp_path / LBL, [1, 10, 2], gz=False)
    with raises_naming(lp, match="label 10 out of range"):
        load_idx_split(tmp_path, IMG, LBL)


def test_missing_file(tmp_path):
    write_idx(tmp_path / IMG, tiny_images(3), gz=False)
    with raises_naming(tmp_path / LBL, match="no such file"):
        load_idx_split(tmp_path, IMG, LBL)
    with raises_naming(tmp_path / "nope", match="cannot read"):
        read_idx(tmp_path / "nope", 1)


def _gz_variants(raw: bytes) -> dict[str, bytes]:
    gz = gzip.compress(raw)
    body = bytes(b ^ 0x55 for b in gz[10:-8])  # flipped deflate bytes: zlib.error, not OSError
    return {
        "not-gzip": b"this is not gzip data at all",
        "bad-header": b"\x1f\x8b" + b"\x00" * 20,
        "bad-deflate": gz[:10] + body + gz[-8:],
        "bad-crc": gz[:-8] + b"\x00\x00\x00\x00" + gz[-4:],
    }


@pytest.mark.parametrize("variant", ["not-gzip", "bad-header", "bad-deflate", "bad-crc"])
def test_corrupt_gzip(tmp_path, variant):
    raw = idx_bytes(tiny_images(2, 8, 8))
    p = tmp_path / (IMG + ".gz")
    p.write_bytes(_gz_variants(raw)[variant])
    with raises_naming(p, match="corrupt or truncated gzip"):
        read_idx(p, 3)


def test_truncated_gzip(tmp_path):
    gz = gzip.compress(idx_bytes(tiny_images(2, 8, 8)))
    p = tmp_path / (IMG + ".gz")
    for cut in (len(gz) // 2, len(gz) - 4):
        p.write_bytes(gz[:cut])
        with raises_naming(p, match="corrupt or truncated gzip"):
            read_idx(p, 3)


# ---- real Fashion-MNIST (Debian package) -------------------------------------------
@pytest.mark.skipif(not D.DEBIAN_FASHION_DIR.is_dir(), reason="dataset-fashion-mnist not installed")
def test_real_fashion_mnist():
    ds = load_fashion_mnist(D.DEBIAN_FASHION_DIR)
    assert ds.train.images.shape == (60000, 1, 32, 32) and ds.test.images.shape == (10000, 1, 32, 32)
    assert ds.train.images.dtype == np.uint8
    np.testing.assert_array_equal(np.bincount(ds.train.labels, minlength=10), [6000] * 10)
    np.testing.assert_array_equal(np.bincount(ds.test.labels, minlength=10), [1000] * 10)
    for s in (ds.train, ds.test):
        border = np.ones((32, 32), bool)
        border[2:30, 2:30] = False
        assert s.images[:, :, border].max() == 0
        assert s.images[:, :, 2:30, 2:30].max() == 255


# ---- CIFAR-10 ------------------------------------------------------------------
def cifar_batch(n: int, seed: int, labels=None) -> dict:
    rng = np.random.default_rng(seed)
    return {b"batch_label": b"fake", b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"labels": list(rng.integers(0, 10, n)) if labels is None else labels}


def write_cifar(root: Path, sizes=(3, 2, 4, 1, 2), n_test=3) -> tuple[Path, list[dict], dict]:
    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True)
    batches = [cifar_batch(n, i) for i, n in enumerate(sizes)]
    for i, b in enumerate(batches, 1):
        (d / f"data_batch_{i}").write_bytes(pickle.dumps(b))
    test = cifar_batch(n_test, 99)
    (d / "test_batch").write_bytes(pickle.dumps(test))
    return d, batches, test


def test_cifar10_shapes_and_channel_order(tmp_path):
    d, bs, test = write_cifar(tmp_path)
    for where in (tmp_path, d):  # parent directory or the batches directory itself
        ds = load_cifar10(where)
        assert ds.train.images.shape == (12, 3, 32, 32) and ds.test.images.shape == (3, 3, 32, 32)
        assert ds.train.images.dtype == np.uint8 and ds.train.labels.dtype == np.int64
        flat = np.concatenate([b[b"data"] for b in bs])
        # CIFAR rows are 1024 R, 1024 G, 1024 B, each row-major 32x32
        np.testing.assert_array_equal(ds.train.images[:, 0], flat[:, :1024].reshape(-1, 32, 32))
        np.testing.assert_array_equal(ds.train.images[:, 1], flat[:, 1024:2048].reshape(-1, 32, 32))
        np.testing.assert_array_equal(ds.train.images[:, 2], flat[:, 2048:].reshape(-1, 32, 32))
        assert ds.train.images[4, 0, 1, 3] == bs[1][b"data"][1, 32 + 3]  # batch 2, image 1, R, row 1, col 3
        np.testing.assert_array_equal(ds.train.labels, np.concatenate([b[b"labels"] for b in bs]))
        np.testing.assert_array_equal(ds.test.labels, test[b"labels"])
        assert ds.channels == 3 and ds.size == 32 and ds.class_names[0] == "airplane"
    assert load_dataset("cifar10", str(tmp_path)).train.images.shape == (12, 3, 32, 32)


def test_cifar10_corrupt_pickle(tmp_path):
    d, _, _ = write_cifar(tmp_path)
    p = d / "data_batch_3"
    p.write_bytes(b"\x80\x04garbage that is not a pickle")
    with raises_naming(p, match="corrupt or truncated pickle"):
        load_cifar10(tmp_path)


def test_cifar10_truncated_pickle(tmp_path):
    d, _, _ = write_cifar(tmp_path)
    p = d / "test_batch"
    p.write_bytes(p.read_bytes()[:200])
    with raises_naming(p, match="corrupt or truncated pickle"):
        load_cifar10(tmp_path)


def test_cifar10_mismatched_counts(tmp_path):
    d, _, _ = write_cifar(tmp_path)
    p = d / "data_batch_2"
    p.write_bytes(pickle.dumps(cifar_batch(4, 7, labels=[1, 2, 3])))
    with raises_naming(p, match="4 images but 3 labels"):
        load_cifar10(tmp_path)


def test_cifar10_bad_content(tmp_path):
    d, _, _ = write_cifar(tmp_path)
    p = d / "data_batch_1"
    p.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}))
    with raises_naming(p, match="out of range"):
        load_cifar10(tmp_path)
    p.write_bytes(pickle.dumps({b"data": np.zeros((2, 1024), np.uint8), b"labels": [0, 1]}))
    with raises_naming(p, match="expected uint8 N x 3072"):
        load_cifar10(tmp_path)
    p.write_bytes(pickle.dumps([1, 2, 3]))
    with raises_naming(p, match="not a CIFAR-10 batch"):
        load_cifar10(tmp_path)
    p.unlink()
    with raises_naming(p, match="no such file"):
        load_cifar10(tmp_path)


# ---- synthetic -----------------------------------------------------------------
def test_synthetic_deterministic_and_shapes():
    a = synthetic(n_train=40, n_test=20, size=16, seed=3)
    b = synthetic(n_train=40, n_test=20, size=16, seed=3)
    c = synthetic(n_train=40, n_test=20, size=16, seed=4)
    assert a.train.images.shape == (40, 1, 16, 16) and a.test.images.shape == (20, 1, 16, 16)
    assert a.train.images.dtype == np.uint8 and a.train.labels.dtype == np.int64
    assert a.train.images.tobytes() == b.train.images.tobytes()
    assert a.test.images.tobytes() == b.test.images.tobytes()
    np.testing.assert_array_equal(a.train.labels, b.train.labels)
    assert a.train.images.tobytes() != c.train.images.tobytes()
    assert 0 <= a.train.labels.min() and a.train.labels.max() <= 9
    rgb = synthetic(n_train=4, n_test=2, size=32, channels=3)
    assert rgb.train.images.shape == (4, 3, 32, 32) and rgb.channels == 3 and rgb.size == 32


def test_synthetic_bars_encode_the_class():
    ds = synthetic(n_train=50, n_test=1, size=32, seed=0)
    band = 32 // 6
    for img, c in zip(ds.train.images[:, 0].astype(int), ds.train.labels):
        pos = (c % 5) * band
        if c < 5:
            assert img[pos:pos + band].min() >= 160  # horizontal bar rows
        else:
            assert img[:, pos:pos + band].min() >= 160  # vertical bar columns


# ---- augment -------------------------------------------------------------------
def _augment_reference(x: np.ndarray, seed: int, shift: int) -> np.ndarray:
    """The documented behaviour replayed from the same generator stream."""
    g = torch.Generator().manual_seed(seed)
    n, c, h, w = x.shape
    flip = (torch.rand(n, generator=g) < 0.5).numpy()
    dy = torch.randint(0, 2 * shift + 1, (n,), generator=g).numpy()
    dx = torch.randint(0, 2 * shift + 1, (n,), generator=g).numpy()
    out = np.zeros_like(x)
    for i in range(n):
        src = x[i, :, :, ::-1] if flip[i] else x[i]
        oy, ox = dy[i] - shift, dx[i] - shift  # out[y, x] = src[y + oy, x + ox], zero outside
        for yy in range(h):
            for xx in range(w):
                sy, sx = yy + oy, xx + ox
                if 0 <= sy < h and 0 <= sx < w:
                    out[i, :, yy, xx] = src[:, sy, sx]
    return out


@pytest.mark.parametrize("dtype", [torch.uint8, torch.float32])
def test_augment_matches_reference(dtype):
    x = torch.randint(1, 256, (12, 2, 6, 7), dtype=torch.uint8).to(dtype)
    y = augment(x, generator=torch.Generator().manual_seed(5))
    assert y.shape == x.shape and y.dtype == dtype
    np.testing.assert_array_equal(y.numpy(), _augment_reference(x.numpy(), 5, 2))
    y2 = augment(x, generator=torch.Generator().manual_seed(5))
    assert torch.equal(y, y2)
    y3 = augment(x, generator=torch.Generator().manual_seed(6))
    assert not torch.equal(y, y3)
    assert not torch.equal(y, x)


def test_augment_identity_and_flip_only():
    x = torch.randint(0, 256, (8, 1, 5, 5), dtype=torch.uint8)
    assert torch.equal(augment(x, flip=False, shift=0), x)
    g = torch.Generator().manual_seed(0)
    y = augment(x, flip=True, shift=0, generator=g)
    flipped = (torch.rand(8, generator=torch.Generator().manual_seed(0)) < 0.5)
    for i in range(8):
        assert torch.equal(y[i], x[i].flip(-1) if flipped[i] else x[i])
    assert 0 < int(flipped.sum()) < 8  # the seed exercises both branches


def test_batches_float_scale():
    s = synthetic(n_train=10, n_test=1, size=8).train
    got = list(D.batches(s, 4))
    assert [len(y) for _, y in got] == [4, 4, 2]
    x0, y0 = got[0]
    assert x0.dtype == torch.float32
    torch.testing.assert_close(x0, torch.from_numpy(s.images[:4]).float() / 256, rtol=0, atol=0)
    np.testing.assert_array_equal(y0.numpy(), s.labels[:4])


# ---- subsets: every class in proportion ------------------------------------------------------
def sorted_split(per_class=(500,) * 10) -> D.Split:
    """A split sorted by class (as a folder of class folders lists it): class c has per_class[c] images."""
    labels = np.repeat(np.arange(len(per_class)), per_class)
    images = np.arange(len(labels), dtype=np.int64).astype(np.uint8).reshape(-1, 1, 1, 1)
    return D.Split(images, labels)


def test_limit_samples_every_class_in_proportion():
    """--limit-train 2000 of a 10-class split sorted by class: 200 images of every class (a prefix was 2000 of
    class 0); seeded: the same images for the same seed, others for another; in the split's order."""
    s = sorted_split((500,) * 10)
    sub = s.subset(2000, seed=0)
    assert np.bincount(sub.labels).tolist() == [200] * 10
    assert sub.class_counts([f"c{i}" for i in range(10)]) == {f"c{i}": 200 for i in range(10)}
    idx = D.stratified_indices(s.labels, 2000, 0)
    assert np.array_equal(idx, D.stratified_indices(s.labels, 2000, 0)) and np.all(np.diff(idx) > 0)
    assert not np.array_equal(idx, D.stratified_indices(s.labels, 2000, 1))
    assert np.array_equal(sub.images[:, 0, 0, 0], s.images[idx, 0, 0, 0])
    assert s.subset(None) is s and s.subset(5000) is s and s.subset(10 ** 6) is s


@pytest.mark.parametrize("per_class,n", [((97, 1, 1, 1), 10), ((300, 20, 7, 1, 1), 50), ((5, 5), 3), ((4, 4, 4), 2)])
def test_limit_keeps_every_class_and_the_count(per_class, n):
    """Exactly n images; every class once n reaches the class count (rare classes too); each class within one
    image of its share otherwise."""
    s = sorted_split(per_class)
    got = np.bincount(s.subset(n, seed=3).labels, minlength=len(per_class))
    assert got.sum() == n and np.all(got <= per_class)
    if n >= len(per_class):
        assert np.all(got >= 1), got
    share = n * np.asarray(per_class) / sum(per_class)
    assert np.all(got <= np.maximum(np.ceil(share), 1)), (got, share)
