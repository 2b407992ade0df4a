"""Training: float epochs with BatchNorm, then BN folding, calibration and
quantization-aware fine-tuning; the result is scored with the exact integer
path over the whole test set.

    python -m zynqflow.model.train --net zynqnet-mini --data fashion-mnist

Writes ``build/<net>/<dataset>/checkpoint.pt`` (resumable: it is rewritten
after every epoch), ``train_log.jsonl`` (one line per epoch) and, at the end,
``metrics.json`` with ``float_top1`` and ``fixed_top1``. Runs on CUDA when
present and on several GPUs or processes under ``torchrun`` (DDP).

Recipes (:data:`RECIPES`, what the command line uses when ``--epochs`` /
``--qat-epochs`` are not given): Fashion-MNIST and the synthetic set train 20
float + 3 QAT epochs with random flips and shifts of up to 2 pixels; CIFAR-10
(``--data cifar10 --data-dir DIR`` or ``--data DIR``) trains 60 float + 5 QAT
epochs with the usual CIFAR augmentation: random 32x32 crops of the image
zero-padded by 4 pixels, and horizontal flips.

A folder of your own images (``--data DIR``: ``train/<class>/``, ``test/<class>/``,
or ``<class>/`` with ``--split``; :mod:`zynqflow.model.folders`) is decoded at the
network's input size by the host's preprocessing (``--recipe``) into a
memory-mapped cache, gray or RGB as its images are (``--channels``); a preset
network's class count follows the folder's classes (a JSON config whose
``num_classes`` differs is refused), and the class names go into the
checkpoint, hence the manifest. It trains 30 float + 3 QAT epochs with flips
and shifts of 1/16 of the input size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from zynqflow.spec.topology import PRESETS, DesignRuleError, NetConfig, check_rules, get_config
from zynqflow.spec.paths import repo_relative

from .data import Dataset, DatasetError, Split, augment, batches, dataset_tag, load_dataset
from .net import ZynqNet


_RUN_ONLY = {"resume", "threads", "profile", "out", "data_dir", "dump_rank_state", "workers"}  # do not change the result

# Per-dataset schedule and augmentation (by dataset_tag); unlisted datasets use the TrainConfig defaults.
# augment_shift: random translation of up to this many pixels with zero fill (= a random crop of the
# image zero-padded by that many pixels), always with random horizontal flips.
RECIPES = {
    "fashion-mnist": dict(epochs=20, qat_epochs=3, augment_shift=2),
    "synthetic": dict(epochs=20, qat_epochs=3, augment_shift=2),
    "cifar10": dict(epochs=60, qat_epochs=5, augment_shift=4),
    "folder": dict(epochs=30, qat_epochs=3, augment_shift=None),   # shift: input size / 16
}


def recipe(data: str) -> dict:
    """The schedule and augmentation of ``data`` (a dataset name, a cifar-10-batches-py directory
    or a folder of images)."""
    tag = dataset_tag(data)
    if tag not in RECIPES and Path(data).is_dir():
        return RECIPES["folder"]
    return RECIPES.get(tag, RECIPES["fashion-mnist"])


def fit_classes(cfg: NetConfig, class_names: tuple[str, ...], preset: bool, where: str,
                from_folder: bool = True) -> NetConfig:
    """``cfg`` for the data's classes: the class names set, and for a preset network the class
    count too (a head of exactly ``num_classes`` channels is resized; a wider one, as ZynqNet's
    1024-channel c10 for 1000 classes, is kept and its first channels are the logits). A JSON
    config whose ``num_classes`` differs from the data is refused, naming both numbers."""
    n = len(class_names)
    if n == cfg.num_classes:
        # a JSON config keeps the names it gives (or has none, unless the data is a folder: its names)
        keep = not preset and (cfg.class_names or not from_folder)
        return cfg if keep else replace(cfg, class_names=tuple(class_names))
    if not preset:
        raise ValueError(f"network config {cfg.name} has num_classes {cfg.num_classes}, the data ({where}) has {n} "
                         f"classes: set num_classes to {n} (and the final conv's channels) in the config")
    heads = [l for l in cfg.layers if l.dst == cfg.output_tensor]
    width = sum(l.cout for l in heads)
    if width > cfg.num_classes and n <= width:
        new = replace(cfg, num_classes=n, class_names=tuple(class_names))
    elif n % len(heads) == 0:
        part = n // len(heads)
        resized = {l.name: replace(l, cout=part, dst_offset=i * part) for i, l in enumerate(heads)}
        new = replace(cfg, layers=tuple(resized.get(l.name, l) for l in cfg.layers), num_classes=n,
                      class_names=tuple(class_names))
    else:
        raise ValueError(f"{cfg.name}: its head has {len(heads)} equal parts, which cannot make {n} classes "
                         f"({where}); use a config with num_classes {n}")
    try:
        check_rules(new)
    except DesignRuleError as e:
        raise ValueError(f"{cfg.name} with {n} classes ({where}): {e}") from e
    return new


@dataclass
class TrainConfig:
    net: str = "zynqnet-mini"
    data: str = "fashion-mnist"
    data_dir: str | None = None
    epochs: int = 20            # float epochs (BatchNorm in the loop)
    qat_epochs: int = 3         # fake-quantized epochs after folding + calibration
    batch_size: int = 128
    lr: float = 0.1
    qat_lr: float = 0.005
    weight_decay: float = 5e-4
    label_smoothing: float = 0.05
    seed: int = 0
    channels: int | None = None      # image folders: 1 (gray) or 3 (RGB); None: 3 if any image is in colour
    recipe: str = "auto"             # image folders: host preprocessing recipe (auto = plain; fashion-mnist)
    split: float | None = None       # <class>/ folders: fraction of each class held out as test (default 0.1)
    skip_bad: bool = False           # image folders: skip (and count) unreadable images instead of stopping
    workers: int | None = None       # image folders: decoding processes (default: one per core)
    calib_images: int = 2048
    limit_train: int | None = None   # use only N training images, every class in proportion (seeded by seed)
    limit_test: int | None = None    # score on N test images, every class in proportion
    holdout: int = 0                 # >0: score on the last N training images (never trained on), not the test set
    out: str | None = None           # default build/<net>/<dataset>
    threads: int | None = None
    profile: bool = False
    resume: bool = True
    dump_rank_state: bool = False    # every rank writes its final weights to <out>/rank<r>_state.pt (DDP checks)


# ---- evaluation -------------------------------------------------------------
@torch.no_grad()
def float_accuracy(net: ZynqNet, split: Split, batch_size: int = 500, device: str = "cpu") -> float:
    was = net.training
    net.eval()
    correct = 0
    for x, y in batches(split, batch_size):
        correct += int((net(x.to(device)).argmax(1).cpu() == y).sum())
    net.train(was)
    return correct / max(1, len(split))


@torch.no_grad()
def integer_logits(net: ZynqNet, images_u8: np.ndarray, batch_size: int = 500, progress: bool = False
                   ) -> np.ndarray:
    """Exact integer logits (int64, N x classes) of uint8 NCHW images."""
    params = net.integer_params()
    out = []
    it = range(0, len(images_u8), batch_size)
    for i in tqdm(it, desc="exact integer path", disable=not progress, leave=False):
        out.append(net.integer_forward(torch.from_numpy(images_u8[i:i + batch_size]), params).numpy())
    return np.concatenate(out) if out else np.zeros((0, net.cfg.num_classes), np.int64)


def fixed_accuracy(net: ZynqNet, split: Split, progress: bool = False) -> float:
    logits = integer_logits(net, split.images, progress=progress)
    return float((logits.argmax(1) == split.labels).mean()) if len(split) else 0.0


# ---- training ---------------------------------------------------------------
def _dist_info() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    return world, rank, local


def _optimizer(net: ZynqNet, lr: float, wd: float) -> torch.optim.Optimizer:
    decay, no_decay = [], []
    for n, p in net.named_parameters():
        (decay if p.ndim > 1 else no_decay).append(p)
    return torch.optim.SGD([{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0}],
                           lr=lr, momentum=0.9, nesterov=True)


def _lr_at(base: float, step: int, total: int, warmup: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return 0.5 * base * (1 + math.cos(math.pi * min(1.0, t)))


def run(tc: TrainConfig, on_epoch=None) -> dict:
    """Train ``tc``; ``on_epoch(record)``, when given, is called after each epoch's record and checkpoint are
    written (e.g. the co-design search's test hook that holds a trial mid-training)."""
    world, rank, local = _dist_info()
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    device = f"cuda:{local}" if torch.cuda.is_available() else "cpu"
    if tc.threads:
        torch.set_num_threads(tc.threads)
    main = rank == 0

    base = get_config(tc.net)
    ds: Dataset = load_dataset(tc.data, tc.data_dir, size=base.input_size, channels=tc.channels, recipe=tc.recipe,
                               split=tc.split, skip_bad=tc.skip_bad, workers=tc.workers,
                               log=print if main else (lambda *a, **k: None))
    if main and ds.description:
        print(f"dataset {ds.description}")
    tag = ds.name if ds.recipe is not None else dataset_tag(tc.data)
    cfg = get_config(tc.net, in_channels=ds.channels)
    if cfg.input_size != ds.size:
        raise ValueError(f"{tc.net} takes {cfg.input_size}x{cfg.input_size} inputs, dataset is {ds.size}x{ds.size}")
    cfg = fit_classes(cfg, ds.class_names, tc.net in PRESETS, ds.description.split(":")[0] or tag,
                      from_folder=ds.recipe is not None)
    train_all, test_split, eval_split = ds.train, ds.test, "test"
    if tc.holdout:
        if not 0 < tc.holdout < len(train_all):
            raise ValueError(f"holdout={tc.holdout}: needs 0 < holdout < {len(train_all)} training images")
        n = len(train_all) - tc.holdout
        test_split = Split(train_all.images[n:], train_all.labels[n:])
        train_all = Split(train_all.images[:n], train_all.labels[:n])
        eval_split = f"holdout (last {tc.holdout} training images)"
    train_split = train_all.subset(tc.limit_train, seed=tc.seed)
    test_split = test_split.subset(tc.limit_test, seed=tc.seed)
    shift = recipe(tc.data)["augment_shift"]
    if shift is None:
        shift = max(1, cfg.input_size // 16)
    data_info = dict(tag=tag, class_names=list(ds.class_names), channels=cfg.in_channels, recipe=ds.recipe,
                     split=tc.split, skip_bad=tc.skip_bad,
                     path=str(Path(tc.data).resolve()) if ds.recipe is not None else None)
    out = Path(tc.out or f"build/{cfg.name}/{tag}")
    out.mkdir(parents=True, exist_ok=True)
    ck_path, log_path = out / "checkpoint.pt", out / "train_log.jsonl"

    torch.manual_seed(tc.seed)
    np.random.seed(tc.seed)
    net = ZynqNet(cfg).to(device)
    start_epoch, state = 0, None
    if tc.resume and ck_path.is_file():
        state = torch.load(ck_path, map_location=device, weights_only=False)
        saved = {**asdict(TrainConfig()), **state.get("train_config", {})}  # keys added later: defaults
        same = {k: v for k, v in saved.items() if k not in _RUN_ONLY} == \
            {k: v for k, v in asdict(tc).items() if k not in _RUN_ONLY}
        if state.get("train", {}).get("done") and not same:
            if main:
                print(f"{ck_path}: finished with other settings; training again from scratch")
            state = None
        elif state.get("train", {}).get("done"):
            if main:
                print(f"{ck_path}: training already finished; delete it or pass --no-resume to retrain")
            return json.loads((out / "metrics.json").read_text()) if (out / "metrics.json").exists() else {}
        elif state.get("train_config", {}).get("net") != tc.net:
            raise ValueError(f"{ck_path}: checkpoint is for {state.get('train_config', {}).get('net')}, not {tc.net}")
        if state is not None:
            net = ZynqNet.from_checkpoint(state).to(device)
            start_epoch = state["train"]["epoch"]
            if main:
                print(f"resuming {ck_path} at epoch {start_epoch}")
    elif ck_path.exists() and main:
        ck_path.unlink()
    if start_epoch == 0 and main and log_path.exists():
        log_path.unlink()

    total_epochs = tc.epochs + tc.qat_epochs
    gen = torch.Generator().manual_seed(tc.seed * 1000 + start_epoch)
    history = []
    float_top1 = state["train"].get("float_top1") if state else None
    opt = None
    prof = None
    if tc.profile and main:
        prof = torch.profiler.profile(schedule=torch.profiler.schedule(wait=2, warmup=2, active=6, repeat=1),
                                      on_trace_ready=torch.profiler.tensorboard_trace_handler(str(out / "profile")))
        prof.start()
    for epoch in range(start_epoch, total_epochs):
        qat = epoch >= tc.epochs
        if qat and not net.act_formats:
            # float phase done: score it, fold BN, calibrate and freeze formats
            float_top1 = float_accuracy(net, test_split, device=device)
            calib = torch.from_numpy(train_split.subset(tc.calib_images, seed=tc.seed).images)
            net.calibrate([calib[i:i + 256].float() / 256 for i in range(0, len(calib), 256)])
            opt = None
            if main:
                print(f"float top-1 {float_top1:.4f}; BN folded, formats frozen; QAT from epoch {epoch + 1}")
        if qat:
            net.set_mode("qat")
        model = net
        if world > 1:
            model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[local] if device != "cpu" else None)
        base_lr = tc.qat_lr if qat else tc.lr
        phase_epochs = tc.qat_epochs if qat else tc.epochs
        phase_epoch = epoch - tc.epochs if qat else epoch
        if opt is None or (state is not None and epoch == start_epoch):
            opt = _optimizer(net, base_lr, tc.weight_decay)
            if state is not None and epoch == start_epoch and state.get("optimizer") and \
                    state["train"].get("qat") == qat:
                opt.load_state_dict(state["optimizer"])
        n_local = len(train_split) // world
        shard = Split(train_split.images[rank::world][:n_local], train_split.labels[rank::world][:n_local])
        steps = math.ceil(len(shard) / tc.batch_size)
        total_steps = steps * phase_epochs
        warmup = 0 if qat else min(steps, total_steps // 10)
        model.train()
        t0 = time.time()
        loss_sum, correct, seen = 0.0, 0, 0
        bar = tqdm(batches(shard, tc.batch_size, shuffle=True, augment_fn=lambda x: augment(x, shift=shift, generator=gen),
                           generator=gen), total=steps, disable=not main, mininterval=2.0,
                   desc=f"epoch {epoch + 1}/{total_epochs} {'qat' if qat else 'float'}", file=sys.stdout)
        for i, (x, y) in enumerate(bar):
            for g in opt.param_groups:
                g["lr"] = _lr_at(base_lr, phase_epoch * steps + i, total_steps, warmup)
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss = F.cross_entropy(logits, y, label_smoothing=tc.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if prof is not None:
                prof.step()
            loss_sum += loss.item() * len(y)
            correct += int((logits.argmax(1) == y).sum())
            seen += len(y)
            if i % 20 == 0:
                bar.set_postfix(loss=f"{loss_sum / seen:.3f}", acc=f"{correct / seen:.3f}")
        if prof is not None:
            prof.stop()
            prof = None
        secs = time.time() - t0
        test_acc = float_accuracy(net, test_split, device=device)
        rec = dict(epoch=epoch + 1, phase="qat" if qat else "float", loss=loss_sum / max(1, seen),
                   train_top1=correct / max(1, seen), test_top1=test_acc, seconds=secs,
                   lr=base_lr)
        if ds.val is not None and len(ds.val):
            rec["val_top1"] = float_accuracy(net, ds.val, device=device)
        history.append(rec)
        if main:
            print(f"epoch {epoch + 1}: loss {rec['loss']:.4f} train {rec['train_top1']:.4f} "
                  f"test {'(fake-quant) ' if qat else ''}{test_acc:.4f} [{secs:.0f}s]")
            with open(log_path, "a") as f:
                f.write(json.dumps(rec) + "\n")
            ck = net.checkpoint_state()
            ck.update(train_config=asdict(tc), dataset=data_info, optimizer=opt.state_dict(),
                      train=dict(epoch=epoch + 1, qat=qat, float_top1=float_top1, done=False))
            torch.save(ck, ck_path.with_suffix(".tmp"))
            os.replace(ck_path.with_suffix(".tmp"), ck_path)
        if on_epoch is not None:
            on_epoch(rec)

    if not net.act_formats:  # qat_epochs == 0: post-training quantization only
        float_top1 = float_accuracy(net, test_split, device=device)
        calib = torch.from_numpy(train_split.subset(tc.calib_images, seed=tc.seed).images)
        net.calibrate([calib[i:i + 256].float() / 256 for i in range(0, len(calib), 256)])
    net.set_mode("qat")
    if tc.dump_rank_state:
        torch.save({k: v.detach().cpu() for k, v in net.state_dict().items()}, out / f"rank{rank}_state.pt")
    metrics = {}
    if main:
        net_cpu = net.to("cpu")
        t0 = time.time()
        fixed_top1 = fixed_accuracy(net_cpu, test_split, progress=True)
        eval_s = time.time() - t0
        log = [json.loads(l) for l in log_path.read_text().splitlines()] if log_path.exists() else history
        metrics = dict(
            net=cfg.name, dataset=tag, class_names=list(cfg.class_names), float_top1=float_top1, fixed_top1=fixed_top1,
            fixed_minus_float=None if float_top1 is None else fixed_top1 - float_top1,
            qat_fake_quant_top1=float_accuracy(net_cpu, test_split),
            test_images=len(test_split), train_images=len(train_split), eval_split=eval_split,
            subset=dict(seed=tc.seed, how="stratified: every class in proportion (model.data.stratified_indices)",
                        train=dict(limit=tc.limit_train, class_counts=train_split.class_counts(cfg.class_names)),
                        test=dict(limit=tc.limit_test, class_counts=test_split.class_counts(cfg.class_names))),
            epochs=tc.epochs, qat_epochs=tc.qat_epochs,
            augmentation=f"random horizontal flip, random crop of the image zero-padded by {shift} px",
            train_seconds=sum(r["seconds"] for r in log),
            seconds_per_epoch_float=_median([r["seconds"] for r in log if r["phase"] == "float"]),
            seconds_per_epoch_qat=_median([r["seconds"] for r in log if r["phase"] == "qat"]),
            integer_eval_seconds=eval_s,
            params=sum(int(p.numel()) for p in net_cpu.parameters()),
            machine=dict(platform=platform.platform(), cpus=os.cpu_count(),
                         threads=torch.get_num_threads(), device=device,
                         cuda=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                         world_size=world),
            command=" ".join(["python -m zynqflow.model.train"] + sys.argv[1:]),
            # paths inside the checkout recorded relative to it (metrics get committed as references)
            train_config={k: repo_relative(v) if k in ("net", "data", "data_dir", "out") and v else v
                          for k, v in asdict(tc).items()},
        )
        ck = net_cpu.checkpoint_state()
        ck.update(train_config=asdict(tc), dataset=data_info,
                  train=dict(epoch=total_epochs, qat=True, float_top1=float_top1, done=True))
        torch.save(ck, ck_path.with_suffix(".tmp"))
        os.replace(ck_path.with_suffix(".tmp"), ck_path)
        (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        print(f"float top-1 {float_top1:.4f}  fixed top-1 {fixed_top1:.4f}  -> {out}/metrics.json")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return metrics


def _median(xs: list[float]) -> float | None:
    return float(np.median(xs)) if xs else None


def parse_args(argv=None) -> TrainConfig:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    d = TrainConfig()
    p.add_argument("--net", default=d.net, help="preset name or JSON config file")
    p.add_argument("--data", default=d.data, help="fashion-mnist, cifar10, synthetic, or a folder: image folders "
                                                  "(train/<class>/ + test/<class>/, or <class>/ with --split), "
                                                  "cifar-10-batches-py or IDX files")
    p.add_argument("--data-dir", default=None, help="dataset directory (DATA=dir)")
    p.add_argument("--channels", type=int, choices=(1, 3), default=None,
                   help="image folders: gray (1) or RGB (3) frames (default: 3 if any image is in colour)")
    p.add_argument("--recipe", default=d.recipe, choices=("auto", "plain", "fashion-mnist"),
                   help="image folders: the host's preprocessing recipe the images are brought to the input with "
                        "(auto: plain = centre-crop and resize; recorded in the manifest)")
    p.add_argument("--split", type=float, default=None,
                   help="single <class>/ folder: fraction of each class held out as the test split (default 0.1)")
    p.add_argument("--skip-bad", action="store_true",
                   help="image folders: skip and count unreadable or truncated images instead of stopping")
    p.add_argument("--workers", type=int, default=None, help="image folders: decoding processes (default: cores)")
    p.add_argument("--epochs", type=int, default=None, help="float epochs (default: the dataset's recipe)")
    p.add_argument("--qat-epochs", type=int, default=None, help="QAT epochs (default: the dataset's recipe)")
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--qat-lr", type=float, default=d.qat_lr)
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument("--label-smoothing", type=float, default=d.label_smoothing)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--limit-train", type=int, default=None,
                   help="train on N images, every class in proportion (a seeded, stratified subset: --seed)")
    p.add_argument("--limit-test", type=int, default=None,
                   help="score on N test images, every class in proportion (seeded by --seed)")
    p.add_argument("--holdout", type=int, default=0,
                   help="score on the last N training images (held out of training) instead of the test set")
    p.add_argument("--out", default=None)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--profile", action="store_true", help="write a PyTorch profiler trace to <out>/profile")
    p.add_argument("--no-resume", dest="resume", action="store_false")
    p.add_argument("--dump-rank-state", action="store_true",
                   help="every DDP rank writes its final weights to <out>/rank<r>_state.pt")
    a = p.parse_args(argv)
    r = recipe(a.data)
    for k in ("epochs", "qat_epochs"):
        if getattr(a, k) is None:
            setattr(a, k, r[k])
    return TrainConfig(**{k: v for k, v in vars(a).items()})


def main(argv=None) -> int:
    tc = parse_args(argv)
    try:
        run(tc)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
