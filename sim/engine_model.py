"""A word-level functional model of the engine: the layer table executed on
an emulated activation RAM, weight ring and DDR (numpy, no timing).

It runs exactly what the layer-table rows say (:mod:`zynqflow.spec.engine`),
with the engines' address arithmetic: activation-RAM rows from bases, ring
slots (``y mod ring_rows``) and banks (``channel word mod N_PE/N_CI``),
weight-ring words modulo the ring, DDR tensors as ``[channel group][y][x][N_PE
bytes]``, the GAP RAM. Ring flow control is checked, not timed: before each
band the model loads as many input rows and weight words as the rings may
hold, and it raises :class:`EngineModelError` when a band or block would wait
for data that can never arrive (a planning error; the hardware would hang).

It is the reference the HLS engine (``hls/engine.h``) is written from and
the first check of a plan: its logits must equal the golden model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zynqflow.spec import engine as E
from zynqflow.spec.numerics import round_shift, round_shift_mode


class EngineModelError(RuntimeError):
    """The layer table cannot run (a flow-control deadlock or an out-of-range address)."""


@dataclass
class EngineBuild:
    """The constants of one engine build (what net_params.h / rtl_params.svh carry)."""

    n_pe: int
    n_ci: int
    act_rows: int
    wring_words: int
    weight_cache: bool
    stem: dict
    gap: dict
    rows: list[int]
    net_id: int
    scratch_bytes: int

    @property
    def wpg(self) -> int:
        return self.n_pe // self.n_ci

    @staticmethod
    def from_plan(plan) -> "EngineBuild":
        e = plan.engine
        return EngineBuild(e.n_pe, e.n_ci, plan.act_rows, plan.wring_words, plan.weight_cache, dict(plan.stem),
                           dict(plan.gap), list(plan.rows), plan.net_id, plan.scratch_bytes)


def _sx(v: np.ndarray, signed: bool) -> np.ndarray:
    """uint8 lanes -> int64, sign-extended when the tensor is signed."""
    v = v.astype(np.int64)
    return np.where(v >= 128, v - 256, v) if signed else v


class EngineModel:
    def __init__(self, build: EngineBuild, weight_image: bytes):
        self.b = build
        self.rows = [E.unpack_row(r) for r in build.rows]
        self.image = np.frombuffer(weight_image, np.uint8)
        hdr = {f.name: int.from_bytes(self.image[4 * i:4 * i + 4].tobytes(), "little") for i, f in enumerate(E.HEADER)}
        self.header = hdr
        self.word_bytes = build.n_pe * build.n_ci
        if hdr["magic"] != E.HEADER_MAGIC or hdr["net_id"] != build.net_id or hdr["word_bytes"] != self.word_bytes:
            raise EngineModelError(f"weight image header {hdr} is not this engine's (net_id 0x{build.net_id:08x})")
        self.words = self.image[hdr["header_bytes"]:].reshape(-1, self.word_bytes)
        if len(self.words) != hdr["n_words"]:
            raise EngineModelError(f"weight image holds {len(self.words)} words, its header says {hdr['n_words']}")

    # ---- memories ---------------------------------------------------------------
    def _act_read(self, base: int, lg_rows: int, lg_w: int, cw: np.ndarray, y: np.ndarray, x: np.ndarray
                  ) -> np.ndarray:
        """Words (uint8 lanes, [..., N_CI]) at channel word cw, row y, column x of a region."""
        lw = self.b.wpg.bit_length() - 1
        bank = cw & (self.b.wpg - 1)
        row = base + ((cw >> lw) << (lg_rows + lg_w)) + ((y & ((1 << lg_rows) - 1)) << lg_w) + x
        if np.any(row >= self.b.act_rows) or np.any(row < 0):
            raise EngineModelError(f"activation-RAM read beyond {self.b.act_rows} rows")
        return self.act[bank, row]

    def _act_write(self, base: int, lg_h: int, lg_w: int, cw: np.ndarray, y: np.ndarray, x: np.ndarray,
                   words: np.ndarray) -> None:
        lw = self.b.wpg.bit_length() - 1
        bank = cw & (self.b.wpg - 1)
        row = base + ((cw >> lw) << (lg_h + lg_w)) + (y << lg_w) + x
        if np.any(row >= self.b.act_rows):
            raise EngineModelError(f"activation-RAM write beyond {self.b.act_rows} rows")
        self.act[bank, row] = words

    # ---- one frame --------------------------------------------------------------
    def run(self, frame: np.ndarray) -> np.ndarray:
        """uint8 HWC frame -> int64 logits (N_CLASSES)."""
        b = self.b
        st = b.stem
        frame = np.ascontiguousarray(frame, np.uint8).reshape(st["in_size"], st["in_size"], st["in_ch"])
        self.act = np.zeros((b.wpg, b.act_rows, b.n_ci), np.uint8)
        self.ddr = np.zeros(max(1, b.scratch_bytes), np.uint8)
        self.gap = np.zeros((b.gap["rows"], b.n_pe), np.int64)
        self.w_loaded = 0 if not (b.weight_cache and getattr(self, "_cached", False)) else len(self.words)
        self.w_released = 0
        for li, r in enumerate(self.rows):
            self._layer(li, r, frame)
        self._cached = b.weight_cache
        n = b.gap["classes"]
        c = np.arange(n)
        return round_shift_mode(self.gap[c // b.n_pe, c % b.n_pe], b.gap["shift"], b.gap.get("round", "half_up"))

    def _load_weights(self) -> None:
        """The weight DMA: as many words as the ring may hold."""
        if self.b.weight_cache:
            self.w_loaded = len(self.words)
        else:
            self.w_loaded = min(len(self.words), self.w_released + self.b.wring_words)

    def _block(self, li: int, start: int, n: int) -> np.ndarray:
        self._load_weights()
        if start + n > self.w_loaded:
            raise EngineModelError(f"layer {li}: weight words {start}..{start + n - 1} are needed but the ring holds "
                                   f"{self.w_released}..{self.w_loaded - 1} ({self.b.wring_words} words): deadlock")
        return self.words[start:start + n]

    def _stem_rows(self, frame: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The stem tensor's rows (im2col or channel-padded frame): [rows, size, in_words*N_CI] uint8."""
        st, C = self.b.stem, self.b.n_ci
        K, S, P, size = st["k"], st["s"], st["pad"], st["size"]
        padded = np.pad(frame, ((P, P), (P, P), (0, 0)))
        cols = []
        for ky in range(K):
            for kx in range(K):
                cols.append(padded[rows[:, None] * S + ky, np.arange(size)[None, :] * S + kx, :])
        lanes = np.concatenate(cols, axis=2)                     # rows x size x K*K*C_in
        out = np.zeros(lanes.shape[:2] + (st["in_words"] * C,), np.uint8)
        out[..., : lanes.shape[2]] = lanes
        return out

    def _layer(self, li: int, r: dict, frame: np.ndarray) -> None:
        b = self.b
        P, C, WPG = b.n_pe, b.n_ci, b.wpg
        isz, osz = 1 << r["lg_in"], 1 << r["lg_out"]
        k, s = (3 if r["k3"] else 1), (2 if r["s2"] else 1)
        pad = k // 2
        chunks, groups, R = r["ci_chunks"], r["co_groups"], 1 << r["lg_band"]
        ring = 1 << r["src_lg_rows"]
        blk = r["w_blk"]
        loaded = 0                      # input rows in the ring
        released = 0                    # input rows the ring may overwrite
        in_h = isz if r["src_kind"] != E.SRC_STEM else b.stem["size"]
        for band in range(osz // R):
            oy = np.arange(band * R, band * R + R)
            last_row = min(in_h - 1, int(oy[-1]) * s - pad + k - 1)
            if r["src_kind"] in (E.SRC_STEM, E.SRC_DDR):
                new_loaded = min(in_h, released + ring)
                if last_row >= new_loaded:
                    raise EngineModelError(f"layer {li}: band {band} needs input row {last_row}, the {ring}-row ring "
                                           f"holds rows {released}..{new_loaded - 1}: deadlock")
                if new_loaded > loaded:
                    self._fill(li, r, frame, np.arange(loaded, new_loaded), isz, ring)
                    loaded = new_loaded
            # input words of the band: [R, osz, k, k, chunks, C]
            iy = oy[:, None] * s + np.arange(k)[None, :] - pad                       # R x k
            ix = np.arange(osz)[:, None] * s + np.arange(k)[None, :] - pad           # osz x k
            inb = ((iy >= 0) & (iy < in_h))[:, None, :, None] & ((ix >= 0) & (ix < isz))[None, :, None, :]
            cw = np.arange(chunks)
            Y = np.clip(iy, 0, in_h - 1)[:, None, :, None, None]
            X = np.clip(ix, 0, isz - 1)[None, :, None, :, None]
            words = self._act_read(r["src_base"], r["src_lg_rows"], r["lg_in"], cw[None, None, None, None, :], Y, X)
            x = _sx(words, bool(r["src_signed"])) * inb[..., None, None]              # R, osz, k, k, chunks, C
            x = x.reshape(R * osz, k * k * chunks * C)
            for g in range(groups):
                start = r["w_off"] + g * blk
                wb = self._block(li, start, blk)
                bias = np.frombuffer(wb[0, : 4 * P].tobytes(), "<i4").astype(np.int64)
                w = wb[1:].view(np.int8).astype(np.int64).reshape(k * k * chunks, P, C).transpose(0, 2, 1)
                acc = x @ w.reshape(k * k * chunks * C, P) + bias                      # pixels x P
                y = round_shift(acc, r["shift"])
                if r["relu"]:
                    y = np.maximum(y, 0)
                y = np.clip(y, r["out_lo"], r["out_hi"])
                valid = P if g < groups - 1 else r["co_last"]
                y[:, valid:] = 0
                self._write(li, r, g, oy, osz, y)
                if not r["w_res"]:
                    self.w_released = start + blk
            released = min(in_h, max(0, (band + 1) * R * s - pad))
        if r["w_res"]:
            self.w_released = r["w_off"] + groups * blk

    def _fill(self, li: int, r: dict, frame: np.ndarray, rows: np.ndarray, isz: int, ring: int) -> None:
        """Input rows into the ring: from the stem (the frame) or from DDR."""
        b = self.b
        C, P, WPG = b.n_ci, b.n_pe, b.wpg
        if r["src_kind"] == E.SRC_STEM:
            data = self._stem_rows(frame, rows)                                       # rows x W x in_words*C
            nw = b.stem["in_words"]
            words = data.reshape(len(rows), isz, nw, C)
            cw = np.arange(nw)
        else:
            cg = r["src_cgrps"]
            y = rows[:, None, None]
            base = r["src_ddr"] + ((np.arange(cg)[None, :, None] * isz + y) * isz + np.arange(isz)[None, None, :]) * P
            units = self.ddr[base[..., None] + np.arange(P)]                          # rows x cg x W x P
            words = units.reshape(len(rows), cg, isz, WPG, C).transpose(0, 2, 1, 3, 4).reshape(len(rows), isz,
                                                                                               cg * WPG, C)
            cw = np.arange(cg * WPG)
        self._act_write(r["src_base"], r["src_lg_rows"], r["lg_in"], cw[None, None, :],
                        (rows % ring)[:, None, None], np.arange(isz)[None, :, None], words)

    def _write(self, li: int, r: dict, g: int, oy: np.ndarray, osz: int, y: np.ndarray) -> None:
        b = self.b
        P, C, WPG = b.n_pe, b.n_ci, b.wpg
        lanes = (y & 0xFF).astype(np.uint8).reshape(len(oy), osz, P)
        if r["dst_kind"] == E.DST_ACT:
            valid = P if g < r["co_groups"] - 1 else r["co_last"]
            nwords = -(-valid // C)
            w = np.arange(nwords)
            cw = r["dst_cw0"] + g * WPG + w
            words = lanes.reshape(len(oy), osz, WPG, C)[:, :, :nwords, :]
            self._act_write(r["dst_base"], r["lg_out"], r["lg_out"], cw[None, None, :], oy[:, None, None],
                            np.arange(osz)[None, :, None], words)
        elif r["dst_kind"] == E.DST_DDR:
            cgi = r["dst_cg0"] + g
            base = r["dst_ddr"] + ((cgi * osz + oy[:, None]) * osz + np.arange(osz)[None, :]) * P
            if base.max() + P > len(self.ddr):
                raise EngineModelError(f"layer {li}: DDR write beyond the {len(self.ddr)}-byte scratch area")
            self.ddr[base[..., None] + np.arange(P)] = lanes
        else:
            self.gap[r["dst_cg0"] + g] = y.sum(axis=0)
