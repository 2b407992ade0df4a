"""Simulation, never deployed to the board, in four rooms:

``rtl/``      the RTL twin under cocotb + Verilator: the Verilator builds and runner (``runner``), the
              testbench of ``zq_top`` (``tb_zq_top``), the board driver on ``zq_top`` through the PYNQ shim
              (``tb_host``, ``host_job``), one testbench per RTL module (``modules``, ``tb/``)
``harness/``  the RTL twin at full speed: a free-running Verilator model with a C++ driver and the AXI4
              memory presets (``harness.cpp``, ``axi_mem.h``), driven from Python (``rtl_fast``, ``backend``)
``csim/``     the HLS engine in g++ C simulation (``runner``), and behind Vitis's control block (``hls_host``)
``world/``    models of the outside world, each built from the vendor's document it names: the DDR behind
              the HP ports (``ddr``: UG585, AMBA AXI), the AXI DMA (``pg021``), the Vitis HLS control block
              (``vitis_ctrl``: generated ``*_control_s_axi.v``, two generations), its register map
              (``vitis_axilite``: UG1399's rules), the ``.hwh`` (``vitis_hwh``: pynq 3.x's parser), pynq's Overlay,
              MMIO, DMA and allocate (``pynq_shim``: the pynq 3.x sources), Vivado's Tcl commands and
              IPs for the board scripts (``vivado``, ``vivado_mock.tcl``, ``vivado_ref/``: UG835, the
              IPs' product guides, UG1118)

At the top: ``backends`` (the ``zynqflow.backends`` entry points ``csim`` and ``rtl``) and
``engine_model`` (the engine's word-level data movement in numpy, a debugging aid).
Imports run one way: ``world`` needs ``spec`` only; ``rtl``, ``harness`` and ``csim`` use ``world``.
"""
