"""The board's root runner against the board's ordinary user (issue 25, points 1-4).

A fake root (``ZQ_ROOT``: install_root.sh installs under it, as root) and a second, non-root uid
(``setpriv``; no user is created) that owns the deploy directory and the PYNQ venv, as ``xilinx``
does on the PYNQ v3.0.1 image. The user tries each way to root that the review found, and each
attempt fails:

1. ``XILINX_XRT`` from the caller (pynq loads ``$XILINX_XRT/lib/libxrt_core.so`` at import);
2. editing the PYNQ venv (``pynq/__init__.py``), or a module the runner imports;
3. ``--bit``, ``--export``, ``--out`` and ``import`` as root; images and globs read as root;
4. a namespace package merged from elsewhere, symbolic links or changed files in the deploy
   directory, ``install_root.sh`` run as root from it, and the notebook importing from it as root.

They need root (to be the fake root and to become the other uid) and ``setpriv``, ``visudo`` and
``sha256sum``; elsewhere they are skipped with the reason (and a warning in the summary)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from zynqflow.export import fixtures as exports
from zynqflow.host.manifest import REPO

NET = "zynqnet-tiny"
PY_DIR = f"python{sys.version_info[0]}.{sys.version_info[1]}"


def _cannot() -> str | None:
    if os.geteuid() != 0:
        return "not root: a fake root and a second uid need root (CI runs as root)"
    for tool in ("setpriv", "visudo", "sha256sum", "base64"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"no {tool} here (apt-get install util-linux sudo coreutils)"
    return None


@pytest.fixture(scope="module")
def world():
    why = _cannot()
    if why:
        warnings.warn(f"CANNOT CHECK the root runner against a non-root user: {why}")
        pytest.skip(f"CANNOT CHECK the root runner against a non-root user: {why}")
    taken = {p.pw_uid for p in pwd.getpwall()}
    uid = next(u for u in range(4242, 60000) if u not in taken)
    base = Path(tempfile.mkdtemp(prefix="zq-runner-", dir="/tmp"))
    base.chmod(0o755)                          # (the other uid must reach its files; /tmp is sticky)
    try:
        yield _World(base, uid)
    finally:
        shutil.rmtree(base, ignore_errors=True)


class _World:
    """base/home (the user's: the deploy directory, images), base/venv (the user's: a PYNQ venv with a
    pynq that records every import in base/marks), base/root-* (fake roots), base/secret (root's)."""

    def __init__(self, base: Path, uid: int):
        self.base, self.uid = base, uid
        self.home = base / "home"
        self.dest = self.home / "zynqflow"
        self.marks = base / "marks"
        self.marks.write_text("")
        tiny = exports.random_export(NET, seed=0, vectors=16)
        bits = base / "bits"
        bits.mkdir()
        self.bit = bits / f"{NET}_pynq-z2.bit"
        self.bit.write_bytes(b"\0")
        self.bit.with_suffix(".hwh").write_text('<PARAMETER NAME="PCW_FPGA0_PERIPHERAL_FREQMHZ" VALUE="100"/>')
        r = subprocess.run(["bash", str(REPO / "board" / "deploy.sh"), "BOARD=pynq.invalid", f"NET={NET}",
                            f"EXPORT={tiny}", f"BIT={self.bit}", "DRY_RUN=1", f"STAGE_DIR={self.dest}",
                            f"DEST={self.dest}"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        self.script = (self.dest / "install_root.sh").read_text()
        self.venv = base / "venv"
        self._fake_venv(self.venv / "lib" / PY_DIR / "site-packages")
        frame = (np.arange(16 * 16) % 251).astype(np.uint8).reshape(16, 16)
        Image.fromarray(frame).save(self.home / "img.png")
        secret = base / "secret"
        secret.mkdir()
        Image.fromarray(frame[::-1]).save(secret / "secret.png")
        (secret / "secret.png").chmod(0o600)
        closed = base / "closed"
        closed.mkdir(mode=0o700)
        Image.fromarray(frame.T).save(closed / "c.png")
        self.chown(self.home, self.venv)

    def _fake_venv(self, site: Path) -> None:
        """pynq 3.0.1's place in the venv, installed by pip (a RECORD with hashes): a stand-in that
        records, in base/marks, which file ran, as whom, and the XILINX_XRT it saw."""
        files = {"pynq/__init__.py": self.pynq_source("copy made at deploy time"),
                 "pynq/lib/libfake.so": "not really a library\n",
                 "pynq-3.0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: pynq\nVersion: 3.0.1\n"
                                                  "Requires-Dist: numpy\nRequires-Dist: pytest ; extra == 'test'\n",
                 "pynq-3.0.1.dist-info/INSTALLER": "pip\n"}
        rows = []
        for rel, text in files.items():
            p = site / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            rows.append([rel, f"sha256={digest}", str(len(text.encode()))])
        rows += [["pynq-3.0.1.dist-info/RECORD", "", ""], ["../../../bin/pynq-tool", "sha256=x", "1"]]
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)
        (site / "pynq-3.0.1.dist-info" / "RECORD").write_text(out.getvalue())
        self.site = site

    def pynq_source(self, tag: str) -> str:
        return ("import os\n"
                f"with open({str(self.marks)!r}, 'a') as f:\n"
                f"    f.write(f'pynq {tag} {{__file__}} uid={{os.getuid()}} XILINX_XRT={{os.environ.get(\"XILINX_XRT\")}}\\n')\n")

    def chown(self, *paths) -> None:
        for p in paths:
            subprocess.run(["chown", "-R", f"{self.uid}:{self.uid}", str(p)], check=True)

    def as_user(self, cmd: str, input: str | None = None) -> subprocess.CompletedProcess:
        """``cmd`` (sh) as the other uid: what the board's ordinary user can do."""
        return subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                               "sh", "-c", cmd], capture_output=True, text=True, timeout=60, cwd=self.base,
                              input=input)

    def install(self, name: str, script: str | None = None, **env) -> tuple[Path, subprocess.CompletedProcess]:
        """The root step, as deploy.sh runs it (the script on stdin of ``sudo sh -s``), into base/<name>."""
        root = self.base / name
        e = dict(os.environ, ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable, PYNQ_VENV=str(self.venv))
        e.update(env)
        r = subprocess.run(["sh", "-s"], input=script or self.script, capture_output=True, text=True,
                           timeout=300, env=e, cwd=self.base)
        return root, r

    def runner(self, root: Path, *args, env=None, caller=True) -> subprocess.CompletedProcess:
        """The installed runner as sudo starts it for the user (SUDO_UID, SUDO_GID) or as ``env``
        says (any environment the caller might get through)."""
        e = {"PATH": os.environ["PATH"]}
        if caller:
            e.update(SUDO_UID=str(self.uid), SUDO_GID=str(self.uid), SUDO_USER=f"uid{self.uid}")
        e.update(env or {})
        return subprocess.run([str(root / "usr/local/lib/zynqflow/bin/zynqflow-run"), *args], capture_output=True,
                              text=True, timeout=120, env=e, cwd=self.home)

    def take_marks(self) -> list[str]:
        lines = self.marks.read_text().splitlines()
        self.marks.write_text("")
        return lines


@pytest.fixture(scope="module")
def installed(world):
    root, r = world.install("root-main")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "zynqflow-installed" in r.stdout
    world.take_marks()
    return root


def _run_dir(root: Path) -> Path:
    return root / "usr/local/lib/zynqflow"


# ---- 1. XILINX_XRT ----------------------------------------------------------------------------------
def test_xilinx_xrt_is_the_images_whatever_the_caller_says(world, installed):
    """The drop-in keeps nothing of the caller's environment, and the runner sets XILINX_XRT=/usr
    even when the caller's XILINX_XRT, PYTHONPATH, LD_PRELOAD and ZYNQFLOW_EXPORT reach it (as if
    sudo kept everything): pynq, imported as root, sees /usr."""
    sudoers = (installed / "etc/sudoers.d/zynqflow").read_text()
    rules = [l for l in sudoers.splitlines() if l.strip() and not l.startswith("#")]
    assert "env_keep" not in sudoers and "SETENV" not in sudoers and "setenv" not in rules[1].replace("!setenv", "")
    assert rules[1] == "Defaults!ZYNQFLOW env_reset, !setenv, !requiretty"
    evil = world.home / "x"
    (evil / "lib").mkdir(parents=True, exist_ok=True)
    hostile = {"XILINX_XRT": str(evil), "PYTHONPATH": str(world.home), "LD_PRELOAD": str(evil / "lib/evil.so"),
               "ZYNQFLOW_EXPORT": str(world.dest / NET), "PYTHONHOME": str(evil), "PYTHONSTARTUP": str(evil)}
    r = world.runner(installed, "info", "--json", env=hostile)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["xilinx_xrt"] == "/usr"
    assert info["export"] == str(_run_dir(installed) / "export" / NET)
    r = world.runner(installed, "classify", str(world.home / "img.png"), "--backend", "pynq", env=hostile)
    assert r.returncode == 2 and "runs on a PYNQ board" in r.stderr, r.stderr
    marks = world.take_marks()
    assert marks and all(m.endswith("uid=0 XILINX_XRT=/usr") for m in marks), marks


# ---- 2. the Python environment -----------------------------------------------------------------------
def test_runner_python_must_be_roots(world):
    """The v3.0.1 image's venv (bin/python3 included) is the user's: install_root.sh refuses to make
    a runner of its python, naming it."""
    py = world.venv / "bin" / "python3"
    py.parent.mkdir(exist_ok=True)
    py.symlink_to(sys.executable)
    world.chown(world.venv)
    try:
        root, r = world.install("root-py", PYNQ_PYTHON=str(py))
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"the runner's python {py} can be changed by a user other than root" in r.stderr
        assert f"{world.venv}/bin" in r.stderr and f"owned by uid {world.uid}" in r.stderr
        assert not (root / "usr/local/lib/zynqflow/bin/zynqflow-run").exists()
    finally:
        py.unlink()


def test_venv_edited_by_its_owner_after_deploy(world, installed):
    """The user edits pynq/__init__.py in the venv (theirs on the image): the runner imports the
    root-owned copy made at deploy time, whose files are checked against the venv's RECORD."""
    site = _run_dir(installed) / "site"
    assert sorted(p.name for p in site.iterdir()) == ["pynq", "pynq-3.0.1.dist-info"]
    assert (site / "pynq/lib/libfake.so").is_file() and not (site.parent / "bin/pynq-tool").exists()
    r = world.as_user(f"cat > {world.site}/pynq/__init__.py", input=world.pynq_source("EDITED BY THE USER"))
    assert r.returncode == 0, r.stderr
    r = world.runner(installed, "classify", str(world.home / "img.png"), "--backend", "pynq")
    assert r.returncode == 2 and "runs on a PYNQ board" in r.stderr, r.stderr
    marks = world.take_marks()
    assert marks == [f"pynq copy made at deploy time {site}/pynq/__init__.py uid=0 XILINX_XRT=/usr"], marks
    # deploying again now copies nothing: the venv no longer matches what pip installed
    root, r = world.install("root-again")
    assert r.returncode == 1 and "pynq/__init__.py differs from its RECORD" in r.stderr, r.stderr
    assert not (root / "usr/local/lib/zynqflow").exists()
    r = world.as_user(f"cat > {world.site}/pynq/__init__.py", input=world.pynq_source("copy made at deploy time"))
    assert r.returncode == 0


@pytest.mark.parametrize("hole", ["module", "directory", "library", "above"])
def test_runner_refuses_what_another_user_can_change(world, hole):
    """Whatever root imports must be root's alone: a module file, its directory, a library inside its
    package (loaded by ctypes/cffi, behind the import system), a directory above it. The user changes
    it, and the runner stops before the module runs, naming the file."""
    root, r = world.install(f"root-{hole}")
    assert r.returncode == 0, r.stderr
    site = _run_dir(root) / "site"
    target = {"module": site / "pynq/__init__.py", "directory": site / "pynq", "library": site / "pynq/lib/libfake.so",
              "above": site}[hole]
    if hole == "directory":
        target.chmod(0o777)
    else:
        world.chown(target)
        r = world.as_user(f"cat > {site}/pynq/__init__.py" if hole in ("module", "above") else f"cat > {target}",
                          input=world.pynq_source("EDITED BY THE USER"))
        assert r.returncode == 0, r.stderr
    world.take_marks()
    r = world.runner(root, "classify", str(world.home / "img.png"), "--backend", "pynq")
    assert r.returncode == 2, r.stderr
    assert "zynqflow-run: refusing to run as root" in r.stderr and str(target) in r.stderr, r.stderr
    assert world.take_marks() == []
    shutil.rmtree(root)


# ---- 3. what the caller passes --------------------------------------------------------------------
def test_bitstream_export_and_out_refused_under_the_runner(world, installed):
    """--bit and --export (any bitstream, with a .dtbo beside it, as root), benchmark --out (any
    path written as root) and import: refused before anything is loaded or written."""
    mine = world.home / "mine.bit"
    mine.write_bytes(b"\0")
    mine.with_suffix(".hwh").write_text("<hwh/>")
    out = world.base / "secret" / "written-as-root.json"
    for args, want in ((["classify", "img.png", "--backend", "pynq", "--bit", str(mine)], "--bit: the runner"),
                       (["info", "--export", str(world.dest / NET)], "--export: the runner"),
                       (["benchmark", "--backend", "golden", "--frames", "1", "--out", str(out)], "--out: the runner"),
                       (["import", "model.onnx", "--out", str(out)], "import does not run under the root runner"),
                       (["doctor", "--backend", "rtl"], "the root runner runs only pynq, golden"),
                       (["benchmark", "--backend", "golden,csim"], "the root runner runs only pynq, golden")):
        r = world.runner(installed, *args)
        assert r.returncode == 2 and want in r.stderr, (args, r.stderr)
    assert not out.exists() and world.take_marks() == []


def test_images_read_with_the_callers_rights(world, installed):
    """Images and globs are opened by a child with the caller's uid and groups: a file only root may
    read, a link to it and a glob in a directory only root may list give the caller nothing; a file
    the caller may read is classified as root would classify it."""
    os.symlink(world.base / "secret" / "secret.png", world.home / "link.png")
    try:
        for arg in (str(world.base / "secret" / "secret.png"), str(world.home / "link.png")):
            r = world.runner(installed, "classify", arg, "--backend", "golden", "--json")
            assert r.returncode == 2 and "Permission denied" in r.stderr and r.stdout == "", r.stderr
        r = world.runner(installed, "stream", str(world.base / "closed" / "*.png"), "--backend", "golden")
        assert r.returncode == 2 and "closed/*.png: Permission denied" in r.stderr and r.stdout == "", r.stderr
    finally:
        (world.home / "link.png").unlink()
    mine = world.runner(installed, "classify", str(world.home / "img.png"), "--backend", "golden", "--json")
    rooted = world.runner(installed, "classify", str(world.home / "img.png"), "--backend", "golden", "--json",
                          caller=False)
    assert mine.returncode == 0 and rooted.returncode == 0, mine.stderr + rooted.stderr
    assert json.loads(mine.stdout) == json.loads(rooted.stdout)
    # root itself (no sudo) reads what root may
    r = world.runner(installed, "classify", str(world.base / "secret" / "secret.png"), "--backend", "golden",
                     caller=False)
    assert r.returncode == 0, r.stderr


# ---- 4. hygiene -----------------------------------------------------------------------------------------
def test_no_namespace_package_merged_from_elsewhere(world, installed, tmp_path):
    """lib/zynqflow is a regular package: a zynqflow/ directory elsewhere on sys.path (a package the
    venv happens to hold) adds no module to it."""
    lib = _run_dir(installed) / "lib"
    assert (lib / "zynqflow" / "__init__.py").is_file()
    other = tmp_path / "other" / "zynqflow" / "sim"
    other.mkdir(parents=True)
    (other / "backends.py").write_text("raise SystemExit('imported from elsewhere')\n")
    code = (f"import sys; sys.path[:0] = [{str(lib)!r}, {str(other.parent.parent)!r}]\n"
            "try:\n    import zynqflow.sim.backends\nexcept ModuleNotFoundError:\n    print('not found')\n")
    r = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "not found", r.stdout + r.stderr


@pytest.mark.parametrize("change", ["symlink", "edit"])
def test_deploy_directory_changed_before_the_root_step(world, change):
    """Between the copy and the root step the user replaces a file of the host package by a link to
    their own file, or edits it: the root step compares what it copied with deploy.sh's hashes and
    installs nothing."""
    victim = world.dest / "lib/zynqflow/host/driver.py"
    saved = victim.read_bytes()
    evil = world.home / "evil.py"
    cmd = (f"printf 'raise SystemExit(1)\\n' > {evil} && rm {victim} && ln -s {evil} {victim}" if change == "symlink"
           else f"printf '\\nimport os\\n' >> {victim}")
    r = world.as_user(cmd)
    assert r.returncode == 0, r.stderr
    try:
        root, r = world.install(f"root-{change}")
        assert r.returncode == 1 and "differ from what deploy.sh sent" in r.stderr, r.stdout + r.stderr
        assert not (root / "usr/local/lib/zynqflow").exists() and not (root / "etc/sudoers.d/zynqflow").exists()
    finally:
        victim.unlink()
        victim.write_bytes(saved)
        world.chown(victim)


def test_install_root_sh_refuses_to_run_as_root_from_the_users_directory(world):
    """``sudo sh ~/zynqflow/install_root.sh``: the user could have changed it; it says so and stops."""
    script = world.dest / "install_root.sh"
    root = world.base / "root-from-home"
    r = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=120, cwd=world.base,
                       env=dict(os.environ, ZQ_ROOT=str(root), PYNQ_PYTHON=sys.executable))
    assert r.returncode == 1 and f"refusing to run as root from {script}" in r.stderr, r.stderr
    assert f"owned by uid {world.uid}" in r.stderr and not root.exists()


def test_notebook_as_root_imports_no_users_package(world):
    """Jupyter runs as root on the image: the notebook's first cell refuses a host package the user
    can change (their deploy directory), before anything of it is imported."""
    nb = json.loads((REPO / "notebooks" / "zynqflow_pynq_z2.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert "ZqOverlay" in cells[1]
    lib = world.home / "nblib"
    pkg = lib / "zynqflow" / "host"
    pkg.mkdir(parents=True)
    (lib / "zynqflow" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "overlay.py").write_text(f"open({str(world.marks)!r}, 'a').write('user package imported as root\\n')\n"
                                    "ZqOverlay = None\n")
    world.chown(lib)
    r = subprocess.run([sys.executable, "-c", cells[0] + "\nfrom zynqflow.host.overlay import ZqOverlay\n"],
                       capture_output=True, text=True, timeout=60, cwd=world.home,
                       env=dict(os.environ, ZYNQFLOW_LIB=str(lib), ZYNQFLOW_BACKEND="golden", PYTHONPATH=""))
    assert r.returncode != 0 and "PermissionError: not importing zynqflow from" in r.stderr, r.stderr
    assert str(lib) in r.stderr
    assert world.take_marks() == []
