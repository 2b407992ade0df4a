"""The HLS engine (``hls/``) in g++ C simulation, and behind the control block Vitis generates."""
