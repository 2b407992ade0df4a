"""Per-module cocotb testbenches of ``rtl/`` (one ``tb_<module>.py`` per module).

Built and run by :mod:`zynqflow.sim.rtl.modules`; pytest: ``tests/test_rtl_modules.py``.
"""
