"""``zynqflow.export``: a trained checkpoint (or any :class:`~zynqflow.spec.qnet.QNet`)
to the files the engines and the host read. ``python -m zynqflow.export --ckpt ...``."""

from .exporter import EngineParams, ExportError, export, load_checkpoint_qnet, plan_hardware, verify

__all__ = ["EngineParams", "ExportError", "export", "load_checkpoint_qnet", "plan_hardware", "verify"]
