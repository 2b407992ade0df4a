"""The RTL twin under cocotb + Verilator: builds, the ``zq_top`` and module testbenches, the driver on the RTL."""
