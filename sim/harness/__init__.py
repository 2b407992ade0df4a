"""The RTL twin at full speed: the free-running Verilator harness (C++ here) and its Python side."""
