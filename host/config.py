"""The driver's configuration: one small dataclass (:class:`DriverConfig`) and the defaults.

Everything else the driver finds out: the register map from the ``.hwh`` and ``engine_info``, the
frame size and the cycle model from the manifest, the PL clock from ``pynq.ps.Clocks``."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

DEFAULT_FCLK_HZ = 100e6       # FCLK0 of the board design (board/pynq_z2.tcl); the board reads the real one
TIMEOUT_FRAMES = 50           # default timeout: this many estimated frame times ...
MIN_TIMEOUT_S = 0.5           # ... but at least this much on the board (Linux scheduling)
DEFAULT_RETRIES = 2           # recoveries (and re-sends) per classify/stream call
DRAIN_ROUNDS = 4              # recovery: output frames taken / one-beat frames sent, at most


@dataclass(frozen=True)
class DriverConfig:
    """What a driver may be told; everything else it finds out (from the overlay and the manifest).

    ``engine``: ``"rtl"`` / ``"hls"`` fixes the register map (default: the ``.hwh``'s, confirmed by
    ``engine_info``). ``timeout_s``: a wait's deadline (default ``TIMEOUT_FRAMES`` frame times, at
    least ``min_timeout_s``). ``fclk_hz``: the PL clock (timeouts, figures). ``retries``: recoveries
    per call; ``recover=False`` leaves the DMA as an error left it (to inspect it). ``check_registers``:
    compare the offsets with the ``.hwh``. ``accel`` / ``dma``: IP names (default: found by type).
    ``simulated``: the clock is simulated time (it holds no host time). ``source``: what holds the
    engine, for messages (``"bitstream /home/xilinx/..."``)."""

    engine: str | None = None
    timeout_s: float | None = None
    min_timeout_s: float = MIN_TIMEOUT_S
    fclk_hz: float = DEFAULT_FCLK_HZ
    retries: int = DEFAULT_RETRIES
    recover: bool = True
    check_registers: bool = True
    accel: str | None = None
    dma: str | None = None
    simulated: bool = False
    source: str = ""

    @classmethod
    def of(cls, **options) -> "DriverConfig":
        """A config from keyword options; None means the default."""
        names = {f.name for f in fields(cls)}
        bad = sorted(set(options) - names)
        if bad:
            raise TypeError(f"unknown driver option(s) {', '.join(bad)}: {', '.join(sorted(names))}")
        return cls(**{k: v for k, v in options.items() if v is not None})

    def but(self, **changes) -> "DriverConfig":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
