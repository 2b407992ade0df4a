"""zynqflow.host: run an exported network on the accelerator (PYNQ board) or
its stand-ins (golden model, C simulation, RTL simulation).

    from zynqflow.host import Accelerator
    acc = Accelerator("build/zynqnet-mini/export", backend="csim")
    print(acc.classify(["shoe.png"]).topk(3))

Command line: ``zynqflow classify|stream|benchmark|info`` (:mod:`zynqflow.host.cli`).
The board and the RTL simulation share one driver (:mod:`zynqflow.host.driver`).
"""

from .accelerator import BACKENDS, Accelerator, Results
from .errors import (AcceleratorError, AcceleratorTimeout, BackendError, ExportFilesError, HostError,
                     NetworkIdMismatch, PreprocessError)
from .manifest import Export

__all__ = ["Accelerator", "Results", "BACKENDS", "Export", "HostError", "ExportFilesError", "BackendError",
           "NetworkIdMismatch", "AcceleratorError", "AcceleratorTimeout", "PreprocessError"]
