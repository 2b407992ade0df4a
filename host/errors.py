"""Exceptions of the host package. Every message names the files and the
register values involved, so that it can be acted on without a debugger."""

from __future__ import annotations


class HostError(RuntimeError):
    """Base class: anything the host driver refuses or cannot do."""


class ExportFilesError(HostError):
    """The export directory (manifest.json, integers.npz, ...) or a bitstream
    file is missing or unusable."""


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


class AcceleratorError(HostError):
    """The accelerator or its DMA reported an error (error frame, DMA error,
    wrong output length, frame counter mismatch)."""


class AcceleratorTimeout(AcceleratorError):
    """A DMA transfer did not complete in time; the message carries the
    accelerator's registers (status, AP_CTRL, frames_done, cycles_last)."""


class PreprocessError(HostError, ValueError):
    """An image or array cannot be turned into an input frame."""
