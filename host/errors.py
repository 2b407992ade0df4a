"""Exceptions of the host package. Every message names the files and the
register values involved, so that it can be acted on without a debugger."""

from __future__ import annotations


class HostError(RuntimeError):
    """Base class: anything the host driver refuses or cannot do."""


class ExportFilesError(HostError):
    """The export directory (manifest.json, integers.npz, ...) or a bitstream
    file is missing or unusable."""


class WeightImageError(ExportFilesError):
    """``weights.bin`` does not belong to the manifest beside it (or to this host's engine
    specification): the message names the file and the header field."""


class BackendError(HostError):
    """Unknown backend, or a backend that cannot run on this machine."""


class NetworkIdMismatch(HostError):
    """The accelerator's net_id register differs from the manifest's network ID."""

    def __init__(self, hw_id: int, manifest_id: int, bitstream: str, manifest: str):
        self.hw_id, self.manifest_id = hw_id, manifest_id
        super().__init__(
            f"network ID mismatch: the accelerator ({bitstream}) reports net_id 0x{hw_id:08x}, "
            f"the manifest ({manifest}) expects network_id 0x{manifest_id:08x}; no frame was sent. "
            "Load the bitstream built from this export, or use the export the bitstream was built from.")


class EngineMismatch(HostError):
    """The engine's ``build_params`` or ``engine_info`` (its N_PE x N_CI array, word widths,
    specification version, weight cache, DDR tensors) differ from what the manifest was
    exported for: the bitstream was built from another export of the same network."""


class AcceleratorError(HostError):
    """The accelerator or its DMA reported an error (error frame, DMA error,
    wrong output length, frame counter mismatch)."""


class AcceleratorTimeout(AcceleratorError):
    """A DMA transfer did not complete in time; the message carries the
    accelerator's registers (status, AP_CTRL, frames_done, cycles_last)."""


class DmaError(AcceleratorError):
    """The AXI DMA reported an error (DMASR DMAIntErr/DMASlvErr/DMADecErr) or
    pynq's DMA driver refused a call (its ``RuntimeError``/``ValueError``:
    "DMA channel not started", "DMA channel not idle", a transfer too large).
    ``dmasr`` is the channel's status register when it could be read."""

    def __init__(self, message: str, dmasr: int | None = None):
        self.dmasr = dmasr
        super().__init__(message)


class EngineStatusError(AcceleratorError):
    """The engine answered a frame with an error frame; ``status`` is its status register,
    ``flags`` the names of the bits set (``zynqflow.spec.engine.STATUS_BITS``), ``frame``
    the frame's index in the call."""

    def __init__(self, message: str, status: int = 0, flags=(), frame: int = -1):
        self.status, self.flags, self.frame = status, list(flags), frame
        super().__init__(message)


class DdrBufferError(AcceleratorError):
    """A DDR buffer for the engine's AXI4 masters (the weight image or the activation
    scratch area) is not 4 KiB aligned or does not end inside the engine's DDR window."""


class RegisterMapMismatch(AcceleratorError):
    """The register offsets of the engine specification (``zynqflow.spec.engine``) differ
    from those the bitstream's ``.hwh`` describes (the message names the register and both
    offsets)."""


class ClockError(HostError):
    """A PL clock the design's timing does not allow, or that cannot be read
    or set (the message names the clock, the limit and the timing record)."""


class PreprocessError(HostError, ValueError):
    """An image or array cannot be turned into an input frame."""
