"""The board command's root runner, and the rule it runs under: root runs only what root alone can change.

``/usr/local/bin/zynqflow`` (any user) runs ``sudo -n /usr/local/lib/zynqflow/bin/zynqflow-run``
(the sudoers drop-in of ``board/deploy.sh``), which runs, with an environment of its own (``env -i``)::

    /usr/bin/python3 -I -S -X pycache_prefix=RUN/pycache RUN/lib/zynqflow/host/runner.py \\
        --root RUN --export RUN/export/NET -- ARGS...

(``RUN`` = ``/usr/local/lib/zynqflow``, root's). This file runs as a script, before any other module
of the package, and imports nothing outside the standard library until it has:

* set ``XILINX_XRT`` to the image's value (``/usr``), whatever the caller's environment said;
* put on ``sys.path`` only the standard library, the root-owned copy of the host package
  (``RUN/lib``), the root-owned copy of the PYNQ venv's ``pynq`` and what it needs (``RUN/site``,
  made by :func:`copy_env` at deploy time) and the system Python's own site directories; no
  ``.pth`` file runs (``-S``); bytecode only from ``RUN/pycache`` (never a ``__pycache__`` beside a
  source);
* checked that the interpreter, every module already loaded, those directories, the host package
  and the deployed export (every file, the bitstream included) are root's and writable by no other
  user (:func:`untrusted`), and installed :class:`TrustedImports` (first on ``sys.meta_path``) and
  an audit hook: a module, a package directory, a bytecode file or a ``ctypes`` library that a user
  other than root could change stops the runner before it runs, naming the file (exit 2). Every
  package imported from outside the standard library is checked file by file (its data and
  shared libraries, which ``ctypes``/``cffi`` load behind the import system, included).

Then it runs :func:`zynqflow.host.cli.main` with a :class:`Runner`: the deployed export only (no
``--export``, ``--bit``, ``--out``, ``import``; backends ``pynq`` and ``golden``), and the caller's
images read in a child process that has the caller's user, groups and rights (:meth:`Runner.as_caller`),
never root's.

``python3 -I -S runner.py --copy-env SITE DEST NAME...`` is the deploy-time half (``install_root.sh``
runs it as root): a copy of the distributions NAME... and what they require, from the PYNQ venv's
``SITE`` (which the v3.0.1 image gives to ``xilinx``), file by file as their ``RECORD`` lists them:
each file's hash checked against ``RECORD``, no symbolic link followed or copied, no file with
other hard links read.
"""

from __future__ import annotations

import base64
import csv
import functools
import grp
import hashlib
import io
import os
import pwd
import re
import stat
import sys

IMAGE_XILINX_XRT = "/usr"                  # what the PYNQ v3.0.1 image's /etc/profile.d sets
SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
RUNNER_BACKENDS = ("pynq", "golden")
CODE_SUFFIXES = (".py", ".pyc", ".so", ".pth")


class Untrusted(Exception):
    """Something root would run can be changed by a user other than root."""


# ---- who can change a path -----------------------------------------------------------------------
def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


@functools.lru_cache(maxsize=None)
def _group_others(gid: int) -> tuple[str, ...] | None:
    """The members of group ``gid`` other than root; None when the group is unknown (then nobody can tell)."""
    try:
        g = grp.getgrgid(gid)
    except KeyError:
        return None
    names = set(g.gr_mem) | {p.pw_name for p in pwd.getpwall() if p.pw_gid == gid}

    def uid(n):
        try:
            return pwd.getpwnam(n).pw_uid
        except KeyError:
            return -1
    return tuple(sorted(n for n in names if uid(n) != 0))


def _writers(st: os.stat_result) -> str | None:
    """Who other than root may change what ``st`` describes (its content; a directory's entries)."""
    if st.st_uid != 0:
        return f"owned by {_user(st.st_uid)}"
    if st.st_mode & stat.S_IWOTH:
        return f"writable by every user ({stat.filemode(st.st_mode)})"
    if st.st_mode & stat.S_IWGRP:
        others = _group_others(st.st_gid)
        if others is None or others:
            try:
                name = grp.getgrgid(st.st_gid).gr_name
            except KeyError:
                name = str(st.st_gid)
            return (f"writable by group {name} ({', '.join(others) if others else 'members unknown'}; "
                    f"{stat.filemode(st.st_mode)})")
    return None


@functools.lru_cache(maxsize=None)
def _lstat(p: str) -> os.stat_result:
    return os.lstat(p)


@functools.lru_cache(maxsize=None)
def _replaceable(p: str) -> str | None:
    """Why a user other than root could replace the entry ``p`` (rename or delete it and put another
    there): a directory above it they can write (a sticky one, as /tmp, only for entries that are not
    root's) or own. None when nobody can."""
    parent = os.path.dirname(p)
    if parent == p:
        return None
    up = _replaceable(parent)
    if up:
        return up
    pst, st = _lstat(parent), _lstat(p)
    w = _writers(pst)
    if w and not (pst.st_mode & stat.S_ISVTX and pst.st_uid == 0 and st.st_uid == 0):
        return f"{parent} is {w}"
    return None


def untrusted(path) -> str | None:
    """Why a user other than root could change ``path`` (as it is named and as it resolves): the file
    or directory itself, or any directory above it. None: only root can."""
    p = os.path.abspath(os.fspath(path))
    while not os.path.lexists(p):           # not there: who could put it there
        p = os.path.dirname(p)
    for q in dict.fromkeys((p, os.path.realpath(p))):
        try:
            why = _replaceable(q)
            st = _lstat(q)
        except OSError as e:
            return f"{q}: {e.strerror}"
        if why:
            return why
        if stat.S_ISLNK(st.st_mode):
            own = None if st.st_uid == 0 else f"a symbolic link owned by {_user(st.st_uid)}"
        else:
            own = _writers(st)
        if own:
            return f"{q} is {own}"
    return None


@functools.lru_cache(maxsize=None)
def untrusted_tree(root) -> str | None:
    """:func:`untrusted` for ``root`` and every file and directory below it (links followed to their
    targets, which must be trusted too)."""
    why = untrusted(root)
    if why or not os.path.isdir(root):
        return why
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(top, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                why = untrusted(p)
            else:
                w = _writers(st)
                why = f"{p} is {w}" if w else None
            if why:
                return why
    return None


# ---- the import guard ----------------------------------------------------------------------------
def refuse(why: str) -> None:
    """Stop at once (nothing untrusted runs): the file, and the fix."""
    sys.stderr.write(f"zynqflow-run: refusing to run as root: {why}. Only root may be able to change what "
                     "runs as root: make it root's (chown root:root, chmod go-w), or deploy again (make deploy) "
                     "for a fresh root-owned copy (board/README.md, 'What the runner trusts')\n")
    sys.stderr.flush()
    os._exit(2)


class TrustedImports:
    """First on ``sys.meta_path``: asks the finders behind it (also those added later) and lets a
    module through only when root alone can change it: its file, its directory, its bytecode, and
    for a package from outside the standard library every file under it. ``zynqflow`` and its
    submodules come only from ``lib`` (the root-owned copy)."""

    def __init__(self, lib: str, stdlib: tuple[str, ...]):
        self.lib = os.path.join(os.path.realpath(lib), "zynqflow")
        self.stdlib = tuple(os.path.realpath(s) + os.sep for s in stdlib)

    def find_spec(self, name, path=None, target=None):
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                self.check(name, spec)
                return spec
        return None

    def check(self, name: str, spec) -> None:
        where = ([spec.origin] if spec.origin and spec.has_location else []) + \
            list(spec.submodule_search_locations or [])
        if name == "zynqflow" or name.startswith("zynqflow."):
            for f in where:
                real = os.path.realpath(f)
                if real != self.lib and not real.startswith(self.lib + os.sep):
                    refuse(f"module {name} from {f}, not from the root-owned host package {self.lib}")
        cached = [spec.cached] if spec.cached and os.path.exists(spec.cached) else []
        for f in where + cached:
            why = untrusted(f)
            if why:
                refuse(f"module {name}: {why}")
        if "." in name:                 # inside its top-level package, checked whole when that was imported
            return
        for f in list(spec.submodule_search_locations or []) or where:
            real = os.path.realpath(f)
            if real.startswith(self.stdlib) and "site-packages" not in real.split(os.sep):
                continue
            why = untrusted_tree(real)
            if why:
                refuse(f"package {name}: {why}")


def _audit(event: str, args) -> None:
    """Code reached by other means than the finders: a ``.py``/``.pyc``/``.so`` opened for reading,
    a library ``ctypes`` loads by path."""
    if event == "open":
        path, mode = args[0], args[1]
        if isinstance(path, str) and path.endswith(CODE_SUFFIXES) and (mode is None or "r" in str(mode)):
            why = untrusted(path)
            if why:
                refuse(f"{path} opened: {why}")
    elif event == "ctypes.dlopen" and isinstance(args[0], str) and "/" in args[0]:
        why = untrusted(args[0])
        if why:
            refuse(f"library {args[0]}: {why}")


def guard(lib: str, export: str) -> None:
    """Check what is already loaded and what will be (see the module docstring); install the guard."""
    import sysconfig

    stdlib = tuple(dict.fromkeys(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")))
    for p in (sys.executable, *stdlib, *sys.path):
        if p and os.path.exists(p):
            why = untrusted(p)
            if why:
                refuse(why)
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None)
        if f:
            why = untrusted(f)
            if why:
                refuse(f"module {name} (loaded at start): {why}")
    for tree in (lib, export):
        why = untrusted_tree(tree)
        if why:
            refuse(why)
    sys.meta_path.insert(0, TrustedImports(lib, stdlib))
    sys.addaudithook(_audit)


# ---- the caller ----------------------------------------------------------------------------------
def caller_ids(environ=None) -> tuple[int, int, list[int]] | None:
    """(uid, gid, groups) of the user who ran ``sudo zynqflow-run`` (sudo's ``SUDO_UID``, ``SUDO_GID``;
    groups from the user database); None when that is root, or when this is not root."""
    env = os.environ if environ is None else environ
    if os.geteuid() != 0 or not env.get("SUDO_UID"):
        return None
    uid = int(env["SUDO_UID"])
    gid = int(env.get("SUDO_GID") or uid)
    if uid == 0:
        return None
    try:
        groups = os.getgrouplist(pwd.getpwuid(uid).pw_name, gid)
    except KeyError:
        groups = [gid]
    return uid, gid, groups


class Runner:
    """What :func:`zynqflow.host.cli.main` runs under as root: the deployed export only, and the
    caller's files read with the caller's rights."""

    backends = RUNNER_BACKENDS

    def __init__(self, export: str, caller: tuple[int, int, list[int]] | None):
        self.export = export
        self.caller = caller

    def as_caller(self, job) -> bytes:
        """``job()`` (returning bytes) in a child process with the caller's user, groups and rights
        (root's own process when the caller is root). The parent never unpickles what the child
        sends: it gets bytes, which it must check as input from that user."""
        if self.caller is None:
            return job()
        uid, gid, groups = self.caller
        sys.stdout.flush()
        sys.stderr.flush()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:                                      # the child: never returns
            code = 1
            try:
                os.close(r)
                os.setgroups(groups)
                os.setresgid(gid, gid, gid)
                os.setresuid(uid, uid, uid)
                if os.geteuid() != uid or os.getegid() != gid:
                    raise OSError("could not take the caller's user")
                data = job()
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                code = 0
            except KeyboardInterrupt:
                code = 130
            except BaseException as e:  # noqa: BLE001 - said, then the child ends
                sys.stderr.write(f"zynqflow: reading as {_user(uid)}: {type(e).__name__}: {e}\n")
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(w)
        chunks = []
        try:
            with os.fdopen(r, "rb") as inp:
                while True:
                    b = inp.read(1 << 20)
                    if not b:
                        break
                    chunks.append(b)
        finally:
            _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code == 130:
            raise KeyboardInterrupt
        if code != 0:
            raise OSError(f"the child reading the caller's files as {_user(uid)} failed (exit {code})")
        return b"".join(chunks)


def python_sites() -> list[str]:
    """This python's own site directories, as ``site`` would add them but without running it (``-S``:
    no ``.pth`` file runs): a venv's (its ``pyvenv.cfg`` beside ``bin/``), and the base
    installation's when the venv includes them (or when this is no venv)."""
    import site

    prefix = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
    cfg = os.path.join(prefix, "pyvenv.cfg")
    if not os.path.isfile(cfg):
        return site.getsitepackages()
    with open(cfg) as f:
        text = f.read()
    system = re.search(r"^\s*include-system-site-packages\s*=\s*true\s*$", text, re.M | re.I) is not None
    return site.getsitepackages([prefix]) + (site.getsitepackages() if system else [])


def main(argv: list[str]) -> int:
    """``runner.py --root RUN --export DIR -- ARGS...`` (the runner's command line, see above)."""
    try:
        sep = argv.index("--")
    except ValueError:
        sep = len(argv)
    opts, args = argv[:sep], argv[sep + 1:]
    if len(opts) != 4 or opts[0] != "--root" or opts[2] != "--export":
        sys.stderr.write("usage: runner.py --root RUN --export DIR -- ARGS...\n")
        return 2
    os.umask(0o022)                          # what root writes (bytecode in RUN/pycache): root's alone
    root, export = os.path.realpath(opts[1]), os.path.realpath(opts[3])
    lib, site_dir = os.path.join(root, "lib"), os.path.join(root, "site")
    os.environ.update(XILINX_XRT=IMAGE_XILINX_XRT, PATH=SAFE_PATH, HOME="/root")
    for k in [k for k in os.environ if k.startswith(("PYTHON", "LD_")) or k == "ZYNQFLOW_EXPORT"]:
        del os.environ[k]
    system_sites = [d for d in python_sites() if os.path.isdir(d)]
    sys.path[:] = [p for p in sys.path if p] + [lib] + ([site_dir] if os.path.isdir(site_dir) else []) + system_sites
    guard(lib, export)
    from zynqflow.host import cli

    return cli.main(args, runner=Runner(export, caller_ids()))


# ---- deploy time: a root-owned copy of the PYNQ venv's packages ----------------------------------
def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _open_beneath(root_fd: int, rel: str) -> int:
    """``rel`` opened for reading below the directory ``root_fd`` without following any symbolic
    link on the way (a link planted in the venv cannot make root read another file)."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Untrusted(f"{rel}: not a path below the site directory")
    fd = os.dup(root_fd)
    try:
        for d in parts[:-1]:
            nxt = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    except OSError as e:
        raise Untrusted(f"{rel}: {e.strerror} (a symbolic link, or missing)") from e
    finally:
        os.close(fd)


def _read_file(root_fd: int, rel: str) -> tuple[bytes, int]:
    fd = _open_beneath(root_fd, rel)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Untrusted(f"{rel}: not a regular file")
        if st.st_nlink != 1:
            raise Untrusted(f"{rel}: has {st.st_nlink} hard links (another name for another file?)")
        return f.read(), stat.S_IMODE(st.st_mode) & ~0o022


def _dists(root_fd: int) -> dict[str, str]:
    """normalized name -> its ``.dist-info`` directory, in the site directory."""
    out = {}
    for entry in os.listdir(root_fd):
        if entry.endswith(".dist-info"):
            meta, _ = _read_file(root_fd, f"{entry}/METADATA")
            m = re.search(r"^Name:\s*(\S+)", meta.decode("utf-8", "replace"), re.M)
            if m:
                out[_norm(m.group(1))] = entry
    return out


def _requires(meta: str) -> list[str]:
    """Requires-Dist names, without those only an extra needs."""
    out = []
    for line in re.findall(r"^Requires-Dist:\s*(.+)$", meta, re.M):
        if "extra" in line.partition(";")[2]:
            continue
        m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line)
        if m:
            out.append(_norm(m.group(0)))
    return out


def copy_env(site_dir: str, dest: str, names: list[str]) -> list[str]:
    """Copy the distributions ``names`` and, transitively, what they require (those installed in
    ``site_dir``; the others come from the system's site directories at run time) into ``dest``
    (which must not exist). Every file their ``RECORD`` lists below ``site_dir`` (no bytecode:
    the runner compiles its own), each checked against the ``RECORD``'s hash; a file that differs,
    a symbolic link or a file with other hard links stops it (:class:`Untrusted`, naming it).
    Returns the distributions copied."""
    root_fd = os.open(site_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        dists = _dists(root_fd)
        todo, done = [_norm(n) for n in names], []
        while todo:
            n = todo.pop()
            if n in done or n not in dists:
                continue
            done.append(n)
            info = dists[n]
            todo += _requires(_read_file(root_fd, f"{info}/METADATA")[0].decode("utf-8", "replace"))
            record, _ = _read_file(root_fd, f"{info}/RECORD")
            for row in csv.reader(io.StringIO(record.decode("utf-8"))):
                if not row:
                    continue
                rel, digest = row[0], (row[1] if len(row) > 1 else "")
                norm = os.path.normpath(rel)
                if os.path.isabs(norm) or norm.startswith("..") or "__pycache__" in norm.split(os.sep) \
                        or norm.endswith(".pyc"):
                    continue                    # scripts outside site-packages, bytecode
                data, mode = _read_file(root_fd, norm)
                if digest:
                    algo, _, want = digest.partition("=")
                    got = base64.urlsafe_b64encode(hashlib.new(algo, data).digest()).rstrip(b"=").decode()
                    if got != want:
                        raise Untrusted(f"{os.path.join(site_dir, norm)} differs from its RECORD ({info}): "
                                        "it was changed after pip installed it; reinstall that package")
                out = os.path.join(dest, norm)
                os.makedirs(os.path.dirname(out), mode=0o755, exist_ok=True)
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
        return done
    finally:
        os.close(root_fd)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--copy-env"]:
        if len(sys.argv) < 5:
            sys.stderr.write("usage: runner.py --copy-env SITE DEST NAME...\n")
            sys.exit(2)
        os.umask(0o022)
        try:
            copied = copy_env(sys.argv[2], sys.argv[3], sys.argv[4:])
        except Untrusted as e:
            sys.stderr.write(f"zynqflow install: refusing to copy the PYNQ venv: {e}\n")
            sys.exit(1)
        print("zynqflow-env: " + " ".join(sorted(copied)))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
