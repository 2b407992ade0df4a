"""zynqflow.host: run an exported network on the accelerator (PYNQ board) or
its stand-ins (golden model, C simulation, RTL simulation).

    from zynqflow.host import Accelerator
    acc = Accelerator("build/zynqnet-mini/export", backend="csim")
    print(acc.classify(["shoe.png"]).topk(3))

    from zynqflow.host import ZqOverlay              # on a PYNQ board: a pynq.Overlay
    ol = ZqOverlay("zynqnet-mini_pynq-z2.bit")       # ZYNQFLOW_BACKEND=rtl: the RTL simulation

Command line: ``zynqflow classify|stream|benchmark|doctor|info`` (:mod:`zynqflow.host.cli`).
The board and the simulations share one driver (:mod:`zynqflow.host.driver`; its rooms:
``registers``, ``ddr``, ``dma``, ``stats``, ``config``).
"""

from .accelerator import BACKENDS, Accelerator, Results
from .errors import (AcceleratorError, AcceleratorTimeout, BackendError, ClockError, DdrBufferError, DmaError,
                     EngineMismatch, EngineStatusError, ExportFilesError, HostError, NetworkIdMismatch,
                     PreprocessError, RegisterMapMismatch, WeightImageError)
from .manifest import Export
from .overlay import ZqOverlay

__all__ = ["Accelerator", "Results", "BACKENDS", "Export", "ZqOverlay", "HostError", "ExportFilesError",
           "BackendError", "NetworkIdMismatch", "AcceleratorError", "AcceleratorTimeout", "DmaError",
           "RegisterMapMismatch", "ClockError", "PreprocessError", "WeightImageError", "EngineMismatch",
           "EngineStatusError", "DdrBufferError"]
