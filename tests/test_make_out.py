"""``make rtl-bench``, ``make csim`` and ``make bench`` take ``OUT=`` for their JSON (issue 23), so that a
second run does not overwrite the first; without it, the default paths. ``OUT`` in the environment (as
CI machines and job runners often set it) is not taken: only a command-line ``OUT=``."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from zynqflow.spec.paths import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")


def dry_run(target: str, *args: str, env_out: str | None = None) -> str:
    """The commands ``make -n target args`` would run (nothing runs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OUT", "MAKEFLAGS", "MAKELEVEL")}
    if env_out is not None:
        env["OUT"] = env_out
    p = subprocess.run(["make", "-n", "--no-print-directory", target, "NET=zynqnet-tiny", *args], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    line = [l for l in p.stdout.replace("\\\n", " ").splitlines() if "zynqflow.bench." in l]
    assert len(line) == 1, p.stdout
    return " ".join(line[0].split())


@pytest.mark.parametrize("target, module, out, default", [
    ("rtl-bench", "rtl_bench", "run2.json", None),                      # rtl_bench.py picks its default
    ("csim", "csim_eval", "run2.json", "--out build/zynqnet-tiny/fashion-mnist/csim.json"),
    ("bench", "bench", "build/bench-run2", None),                       # bench.py's --out default build/bench
])
def test_out_on_the_command_line_only(target, module, out, default):
    given = dry_run(target, f"OUT={out}")
    assert f"-m zynqflow.bench.{module} " in given and (given + " ").count(f"--out {out} ") == 1
    assert given.count("--out ") == 1
    for cmd in (dry_run(target), dry_run(target, env_out="/elsewhere/x.json")):
        assert "/elsewhere" not in cmd
        if default:
            assert default in cmd
        else:
            assert "--out" not in cmd
