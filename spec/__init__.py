"""``zynqflow.spec``: the torch-free core of the flow.

The numeric contract (:mod:`.numerics`, docs/fixed-point.md), the network
topology and its design rules (:mod:`.topology`), the quantized network
(:mod:`.qnet`), the numpy golden model (:mod:`.golden`) and the engine
specification shared by the HLS engine, the RTL twin and the host driver.
It imports numpy only, so it runs on a PYNQ image as it is.
"""
