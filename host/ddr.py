"""DDR buffers: the weight image and the activation scratch area the engine reads through its
AXI4 masters (``m_axi_wts``, ``m_axi_act``), and the DMA's frame buffers.

All come from ``allocate(shape, dtype)`` (board: ``pynq.allocate``, physically contiguous CMA
buffers; simulation: buffers in the simulated DDR). The engine takes only addresses that are
4 KiB aligned and end inside its 512 MiB DDR window (else status ``address_range``): a buffer
that is not is refused here (:class:`DdrBufferError` naming it) before any register is written.
The weight image is copied in and **flushed** (the engine reads DDR, not the CPU's cache);
``wts`` / ``act`` get the buffers' addresses (without a scratch area, ``act`` gets the weight
buffer's address: valid and aligned, never used).
"""

from __future__ import annotations

import numpy as np

from zynqflow.spec import engine as E

from .errors import AcceleratorError, DdrBufferError


def free(buf) -> None:
    for name in ("freebuffer", "close"):
        f = getattr(buf, name, None)
        if callable(f):
            f()
            return


class DdrBuffers:
    """The buffers of one open driver. ``allocate``: pynq's; ``export``: the
    :class:`~zynqflow.host.manifest.Export` (sizes); ``weights``: the checked image (bytes)."""

    def __init__(self, allocate, export, weights: bytes, source: str = ""):
        self.allocate, self.export, self.weights, self.source = allocate, export, weights, source
        self.ddr: dict[str, object] = {}           # "weights", "scratch"
        self._frames = None                          # ([in, in], [out, out]) ping-pong
        self._probe = None                           # one-word input, one-frame output
        self.weight_loads = 0                        # the image copied into its buffer and flushed

    # ---- the engine's memory -----------------------------------------------------------
    def _engine_buffer(self, what: str, nbytes: int):
        """A physically contiguous buffer for an AXI4 master, checked: 4 KiB aligned, inside the window."""
        buf = self.allocate(shape=(nbytes,), dtype=np.uint8)
        try:
            addr = int(buf.physical_address)
            end = addr + nbytes
            if addr % E.ADDR_ALIGN or addr < 0 or end > E.DDR_WINDOW_BYTES:
                why = (f"is not {E.ADDR_ALIGN}-byte aligned" if addr % E.ADDR_ALIGN else
                       f"ends at 0x{end:x}, past the engine's DDR window (0x0 .. 0x{E.DDR_WINDOW_BYTES:x}, "
                       f"{E.DDR_WINDOW_BYTES >> 20} MiB)")
                raise DdrBufferError(
                    f"the {what} buffer ({nbytes} bytes) that allocate() returned at physical address 0x{addr:08x} "
                    f"{why}: the engine ({self.source}) refuses such an address (status bit address_range). "
                    "Free memory (other overlays' buffers) or enlarge the CMA area, and open the accelerator again")
        except BaseException:
            free(buf)
            raise
        return buf

    def allocate_engine_memory(self) -> None:
        ex = self.export
        if len(self.weights) != ex.weight_image_bytes:
            raise DdrBufferError(f"weight image of {len(self.weights)} bytes, {ex.manifest_path} says "
                                 f"{ex.weight_image_bytes} (memory.weight_image_bytes)")
        self.ddr["weights"] = self._engine_buffer("weight image (m_axi_wts)", ex.weight_image_bytes)
        if ex.scratch_bytes:
            self.ddr["scratch"] = self._engine_buffer("activation scratch (m_axi_act)", ex.scratch_bytes)
        self.load_weights()

    def load_weights(self) -> None:
        """Copy the weight image into its buffer and flush it (CPU cache -> DDR)."""
        buf = self.ddr["weights"]
        buf[:] = np.frombuffer(self.weights, np.uint8)
        buf.flush()
        self.weight_loads += 1

    def weights_in_ddr(self) -> bytes:
        """What DDR holds in the weight buffer (``invalidate()`` first: DDR -> the CPU's view)."""
        buf = self.ddr["weights"]
        inv = getattr(buf, "invalidate", None)
        if callable(inv):
            inv()
        return bytes(np.asarray(buf).tobytes())

    @property
    def bases(self) -> dict[str, int]:
        """The addresses the engine gets: ``wts`` (the weight image), ``act`` (the scratch area)."""
        w = int(self.ddr["weights"].physical_address)
        s = self.ddr.get("scratch")
        return dict(wts=w, act=int(s.physical_address) if s is not None else w)

    # ---- the DMA's buffers -----------------------------------------------------------
    def frames(self):
        """Two input and two output buffers (ping-pong), allocated on first use."""
        if self._frames is None:
            ins = [self.allocate(shape=(self.export.bytes_per_frame,), dtype=np.uint8) for _ in range(2)]
            outs = [self.allocate(shape=(self.export.num_classes,), dtype=np.int32) for _ in range(2)]
            self._frames = (ins, outs)
            for b in ins + outs:
                if getattr(b, "physical_address", 0) % 4:
                    raise AcceleratorError(f"DMA buffer at 0x{b.physical_address:x} is not 32-bit aligned")
        return self._frames

    def probe(self):
        """One-word input and one-frame output buffers (network-ID probe, recovery)."""
        if self._probe is None:
            self._probe = (self.allocate(shape=(1,), dtype=np.uint32),
                           self.allocate(shape=(self.export.num_classes,), dtype=np.int32))
        return self._probe

    def free_all(self) -> None:
        """Free every buffer (the engine and the DMA must not use them after this)."""
        for group in (self._frames or ((), ())) + ((self._probe or ()), tuple(self.ddr.values())):
            for b in group:
                free(b)
        self._frames = self._probe = None
        self.ddr = {}
