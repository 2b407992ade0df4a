"""The engine specification (interim): the layer-table row shared by the
exporter, the HLS engine and the RTL twin. Being replaced by the full
specification (register map, status bits, cycle model, DDR image)."""

from __future__ import annotations

# Field order of one layers.mem line / LayerDesc (each field 16 bits, signed
# where noted; line = fields[0] in the least significant bits).
LAYER_FIELDS = (
    "in_size", "out_size", "k", "stride", "ci_chunks", "co_groups", "cout", "relu",
    "shift",            # signed
    "src_buf", "dst_buf", "dst_word_off", "dst_words", "w_base", "b_base", "is_last",
    "out_lo",           # signed
    "out_hi",           # signed
)
SIGNED_FIELDS = {"shift", "out_lo", "out_hi"}
