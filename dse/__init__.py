"""``zynqflow.dse``: the co-design search over the network family and the
engine configuration (accuracy x frames/s x resources), with hardware in the
loop. A top floor: it imports every other package and nothing imports it.
See docs/dse.md and ``python -m zynqflow.dse --help``."""
