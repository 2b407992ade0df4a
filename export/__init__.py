"""``zynqflow.export``: a trained checkpoint (or any :class:`~zynqflow.spec.qnet.QNet`)
to the files the engines and the host read. ``python -m zynqflow.export --ckpt ...``.

:mod:`.plan` lays a network out for an engine build (placements, rings, addresses,
the layer table, the weight image); :mod:`.exporter` checks the integers and writes
the files; :mod:`.fixtures` makes random-weight exports for tests and benches."""

from .exporter import export, load_checkpoint_qnet, verify
from .plan import EngineParams, ExportError, HwPlan, plan_hardware, plan_layout

__all__ = ["EngineParams", "ExportError", "HwPlan", "export", "load_checkpoint_qnet", "plan_hardware", "plan_layout",
           "verify"]
