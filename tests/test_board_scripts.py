"""board/ scripts without Vivado and without a board: bitstream.sh's timing gate
(a fake `vivado` on PATH), pynq_z2.tcl's timing check, PS settings and the
engine's DDR ports (under tclsh with Vivado's commands stubbed), deploy.sh's
copy and link step (a fake `ssh` that runs the remote command here; the
weight image shipped) and the board wrapper (XILINX_XRT, sudo, a link on PATH)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from zynqflow.export import fixtures as exports
from zynqflow.host.manifest import REPO
from zynqflow.spec import engine as E

from vivado_mock import run_block_design

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
# stands in for `vivado -mode batch ... -source pynq_z2.tcl -tclargs IP OUT NET JOBS`
if [ "$1" = "-version" ]; then echo "Vivado v2023.2 (fake)"; exit 0; fi
while [ "$#" -gt 0 ] && [ "$1" != "-tclargs" ]; do shift; done
out="$3"; net="$4"
echo bit > "$out/${net}_pynq-z2.bit"       # written even when timing fails (as an old pynq_z2.tcl did)
echo hwh > "$out/${net}_pynq-z2.hwh"
if [ -n "$FAKE_WNS" ]; then
    printf 'wns_ns %s\nwhs_ns %s\nfclk_mhz 100\n' "$FAKE_WNS" "$FAKE_WHS" > "$out/timing.txt"
    printf 'lut 12345 53200 23.20\nff 20480 106400 19.25\nbram 70.5 140 50.36\ndsp 130 220 59.09\n' > "$out/utilization.txt"
fi
exit "${FAKE_RC:-0}"
"""


def _bitstream(tmp_path: Path, tiny: Path, **env):
    bindir = tmp_path / "bin"
    if not bindir.exists():
        bindir.mkdir()
        _script(bindir / "vivado", FAKE_VIVADO)
        ip = tmp_path / "hls" / "zq_hls" / "solution1" / "impl" / "ip"
        ip.mkdir(parents=True)
        (ip / "component.xml").write_text("<x/>")
        os.utime(ip / "component.xml")                     # newer than the export's net_params.h
    e = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", EXPORT=str(tiny), HLS_DIR=str(tmp_path / "hls"),
             OUT=str(tmp_path / "vivado"), BITSTREAMS=str(tmp_path / "bits"), **env)
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


def test_bitstream_timing_met_copies_and_records(tmp_path, tiny):
    r = _bitstream(tmp_path, tiny, FAKE_WNS="0.412", FAKE_WHS="0.051")
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


# ---- pynq_z2.tcl under tclsh ----------------------------------------------------------------
def _tcl(tmp_path: Path, wns: str, whs: str = "0.05", util: str = UTIL_2023):
    return run_block_design(tmp_path, MOCK_WNS=wns, MOCK_WHS=whs, MOCK_UTIL=util)


needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="no tclsh")


@needs_tclsh
def test_tcl_fails_on_negative_slack(tmp_path):
    r, log, out = _tcl(tmp_path, wns="-0.321")
    assert r.returncode == 3 and log.rstrip().endswith("EXIT 3"), r.stdout + r.stderr
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
def test_tcl_engine_ddr_ports(tmp_path):
    """The engine's two AXI4 masters reach the DDR through two PS7 high-performance ports in 64-bit
    mode on different DDR controller ports (m_axi_wts -> HP0, m_axi_act -> HP2), each through a
    SmartConnect (AXI4 -> AXI3), with the DDR at 0, 512 MiB (the engine's window) in both address
    spaces, and the clock and reset of every other port; the DMA keeps to HP1."""
    r, log, _ = _tcl(tmp_path, wns="0.3")
    assert r.returncode == 0, r.stderr
    assert E.DDR_WINDOW_BYTES == 512 << 20
    for port, hp in (("wts", "HP0"), ("act", "HP2")):
        for line in [f"connect_bd_intf_net zq_top_0/m_axi_{port} {port}_sc/S00_AXI",
                     f"connect_bd_intf_net {port}_sc/M00_AXI ps7/S_AXI_{hp}",
                     f"create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect:1.0 {port}_sc",
                     f"PROP CONFIG.PCW_USE_S_AXI_{hp}=1", f"PROP CONFIG.PCW_S_AXI_{hp}_DATA_WIDTH=64",
                     f"assign_bd_address -offset 0x00000000 -range 512M -target_address_space "
                     f"zq_top_0/Data_m_axi_{port} ps7/S_AXI_{hp}/{hp}_DDR_LOWOCM -force",
                     f"connect_bd_net ps7/FCLK_CLK0 ps7/S_AXI_{hp}_ACLK", f"connect_bd_net ps7/FCLK_CLK0 {port}_sc/aclk",
                     f"connect_bd_net rst_fclk0/peripheral_aresetn {port}_sc/aresetn"]:
            assert line in log, line
    assert "connect_bd_intf_net mem_sc/M00_AXI ps7/S_AXI_HP1" in log and "PROP CONFIG.PCW_USE_S_AXI_HP1=1" in log
    assert "mem_sc/M00_AXI ps7/S_AXI_HP0" not in log and "S_AXI_HP3" not in log
    # the engine's ports are mapped before the blanket assign_bd_address
    assert log.index("Data_m_axi_act") < log.index("\nassign_bd_address\n")


# ---- deploy.sh: the copy, the link and the wrapper ------------------------------------------------
FAKE_SSH = r"""#!/usr/bin/env bash
# ssh [opts] user@host command: runs the command here (the "board" is this machine, HOME=$FAKE_HOME)
while [ "$#" -gt 0 ] && [[ "$1" != *@* ]]; do shift; done
shift
HOME="$FAKE_HOME" exec bash -c "$*"
"""
FAKE_SUDO = r"""#!/usr/bin/env bash
# sudo: records its arguments; -n (no password) fails when FAKE_SUDO_PASSWORD is set. The zynqflow
# runner is run as sudo's env_reset would (only PATH, HOME and XILINX_XRT), from under $ZQ_ROOT
# (where the test's install_root.sh put it); anything else (sh install_root.sh) runs as it is.
echo "sudo $*" >> "$FAKE_LOG"
if [ "$1" = "-n" ] && [ -n "$FAKE_SUDO_PASSWORD" ]; then echo "sudo: a password is required" >&2; exit 1; fi
while [ "${1#-}" != "$1" ]; do shift; done
case "$1" in
    /usr/local/lib/zynqflow/*) cmd="$ZQ_ROOT$1"; shift
        exec env -i PATH="$PATH" HOME=/root ${XILINX_XRT+XILINX_XRT="$XILINX_XRT"} "$cmd" "$@" ;;
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
    """The copy as BOARD_USER, then one root step over ssh -t (sudo asks the password there, once):
    the runner, the sudoers drop-in and /usr/local/bin/zynqflow (under the fake root ZQ_ROOT)."""
    bit, env = staged
    dest = tmp_path / "board" / "zynqflow"
    root = tmp_path / "root"
    r = _deploy(tiny, bit, env, f"DEST={dest}", ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable)
    assert r.returncode == 0, r.stderr
    assert json.loads((dest / "zynqflow.json").read_text()) == {"export": "zynqnet-tiny"}
    assert (dest / "zynqnet-tiny" / "manifest.json").is_file() and (dest / "lib/zynqflow/host/cli.py").is_file()
    assert f"sudo sh {dest}/install_root.sh" in (tmp_path / "sudo.log").read_text()
    assert (root / "usr/local/lib/zynqflow/lib/zynqflow/host/cli.py").is_file()
    assert os.access(root / "usr/local/lib/zynqflow/bin/zynqflow-run", os.X_OK)
    assert (root / "usr/local/bin/zynqflow").is_file()
    assert oct((root / "etc/sudoers.d/zynqflow").stat().st_mode)[-3:] == "440"
    assert "zynqflow doctor" in r.stdout


def test_wrapper_sets_xilinx_xrt_through_sudo_and_a_link(tmp_path, tiny, staged):
    """The installed command, started through a link on PATH by a non-root user (fake id and sudo):
    sudo -n on the root-owned runner (never a prompt), XILINX_XRT=/usr when unset, a user's value
    kept (the only variable the drop-in keeps), and the deployed export found."""
    bit, env = staged
    dest = tmp_path / "board" / "zynqflow"
    root = tmp_path / "root"
    r = _deploy(tiny, bit, env, f"DEST={dest}", ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable)
    assert r.returncode == 0, r.stderr
    bindir = tmp_path / "pathbin"
    bindir.mkdir()
    (bindir / "zynqflow").symlink_to(root / "usr/local/bin/zynqflow")
    base = {k: v for k, v in env.items() if k not in ("XILINX_XRT", "ZYNQFLOW_EXPORT", "PYTHONPATH")}
    base.update(PATH=f"{bindir}:{env['PATH']}", ZQ_ROOT=str(root))
    work = tmp_path / "work"
    work.mkdir()
    for given, want in ((None, "/usr"), ("/opt/xilinx/xrt", "/opt/xilinx/xrt")):
        e = dict(base, **({"XILINX_XRT": given} if given else {}))
        w = subprocess.run(["zynqflow", "info", "--json"], capture_output=True, text=True, env=e, cwd=work,
                           timeout=120)
        assert w.returncode == 0, w.stderr
        info = json.loads(w.stdout)
        assert info["xilinx_xrt"] == want
        assert info["export"] == str((dest / "zynqnet-tiny").resolve())
        sudo = (tmp_path / "sudo.log").read_text().splitlines()[-1]
        assert sudo == "sudo -n /usr/local/lib/zynqflow/bin/zynqflow-run info --json"
    # no rule (a password would be needed): an error, not a prompt
    w = subprocess.run(["zynqflow", "info"], capture_output=True, text=True, env=dict(base, FAKE_SUDO_PASSWORD="1"),
                       cwd=work, timeout=60, stdin=subprocess.DEVNULL)
    assert w.returncode != 0 and "password is required" in w.stderr
