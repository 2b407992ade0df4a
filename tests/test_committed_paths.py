"""No committed file holds an absolute path of a developer's machine (issue 23).

Results that get committed (reference metrics, Pareto fronts, checkpoints) record paths relative to the
checkout (``zynqflow.spec.paths.repo_relative``); a path under a home, scratch or temporary directory
would name one engineer's machine and mean nothing in a clone. Every file ``git ls-files`` lists is
read (a checkpoint's pickle is stored uncompressed, so its strings are read too); system paths
(``/usr/share/...``, ``/dev/``, ``/opt/xilinx/...``) never match, and the few deliberate ones are
listed in ALLOWED with the reason.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from zynqflow.spec.paths import REPO, repo_relative

# where a developer's files live: homes, scratch and work areas, temporary directories
MACHINE_ROOTS = ("home", "root", "work", "tmp", "Users", "mnt", "scratch", "var/tmp", "var/folders", "private/var")
PATH = re.compile(rb"(?<![\w.~/$-])/(?:" + b"|".join(re.escape(r.encode()) for r in MACHINE_ROOTS)
                  + rb")/[\w.+@%-]+(?:/[\w.+@%-]*)*")

# deliberate absolute paths: (prefix, why)
ALLOWED = (
    ("/home/xilinx", "the PYNQ board's user: where board/deploy.sh installs (its documented default DEST)"),
    ("/tmp/shapes", "the docs' example folder for `python -m zynqflow.model.folders shapes`"),
    ("/tmp/fake.bit", "a made-up bitstream name in the host tests' messages (never opened)"),
)


def hits(data: bytes) -> list[str]:
    """The machine paths in ``data`` that ALLOWED does not cover."""
    out = []
    for m in PATH.finditer(data):
        s = m.group().decode("utf-8", "replace")
        if not any(s == a or s.startswith(a + "/") for a, _ in ALLOWED):
            out.append(s)
    return out


def test_the_pattern_finds_machine_paths_only():
    # (the machine paths below are spelt with \x2f, so that this file holds none itself)
    machine = ["\x2fwork/engine/build/dse/t/net.json", "\x2fhome/alice/x.pt", "\x2fUsers/bob/data",
               "\x2ftmp/pytest-1/e", "\x2froot/.cache/zq"]
    fine = ["/usr/share/datasets/fashion-mnist", "/dev/null", "/opt/xilinx/Vivado", "/proc/cpuinfo",
            "https://example.org/home/page", "./tmp/x", "build/tmp/y", "$HOME/work/z", "/home/xilinx/zynqflow"]
    text = f'"net": "{machine[0]}", ' + " ".join(machine[1:] + fine)
    assert hits(text.encode()) == machine


def test_repo_relative():
    assert repo_relative(REPO / "build" / "dse" / "net.json") == "build/dse/net.json"
    assert repo_relative("/usr/share/datasets") == "/usr/share/datasets"


def test_no_committed_file_holds_a_developer_path():
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"not a git checkout: {e}")
    bad = []
    for name in filter(None, files.decode().split("\0")):
        f = REPO / name
        if f.is_file() and not f.is_symlink():
            bad += [f"{name}: {h}" for h in hits(f.read_bytes())]
    assert not bad, f"{len(bad)} absolute paths of a developer machine in committed files:\n" + "\n".join(bad[:40])
