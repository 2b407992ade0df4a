"""Processes, waits and builds, the same way everywhere (standard library only).

* :func:`pool_context`: the start method of every worker pool. A process must never fork while
  another of its threads may be inside a threaded OpenBLAS (or OpenMP) call: OpenBLAS stops its
  workers around a fork, and that call spins forever. So ``fork`` (cheap, and no re-import of the
  caller's main module) only when the calling thread is the process's only Python thread (native
  library threads work only inside a call some Python thread made); otherwise a ``forkserver``
  (``spawn`` where there is none), which starts workers from a clean process: then a caller that
  runs its own script keeps its work under ``if __name__ == "__main__":``.
* :func:`drain`: the results of a pool's tasks as they finish, each wait bounded; when no
  task finishes within the bound the pool's processes are ended and :class:`WaitTimeout`
  names what was waited for and what is still pending. A failed task ends the pool too.
* :func:`wait_process`: a child process, waited for with a bound and a message.
* :func:`build_line` / :func:`timed_build`: one line per build (what, and the time it took);
  the compilers' output goes to a log file whose path a failure names.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from pathlib import Path
from typing import Iterator, Mapping

from .paths import repo_relative


class WaitTimeout(TimeoutError):
    """A bounded wait ran out; the message names what it waited for."""


def pool_context(preload: tuple[str, ...] = ()):
    """A multiprocessing context whose workers cannot catch a thread of this process mid-call:
    ``fork`` when this is the only Python thread, else ``forkserver`` (its server preloading the
    modules ``preload`` when it is not running yet), else ``spawn``."""
    import multiprocessing as mp
    import threading

    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return mp.get_context("fork")
    method = "forkserver" if "forkserver" in methods else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver" and preload:
        ctx.set_forkserver_preload(list(preload))
    return ctx


def end_pool(pool) -> None:
    """Stop a ProcessPoolExecutor now: its processes terminated, pending tasks cancelled."""
    for p in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


def drain(pool, futures: Mapping[Future, str], bound_s: float, what: str) -> Iterator[tuple[Future, object]]:
    """(future, result) of ``futures`` (each mapped to a name for messages) as they finish. Waits at
    most ``bound_s`` seconds for the next one; then, or when a task raises (the error is raised
    here), the pool is ended (:func:`end_pool`) before the error leaves."""
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=bound_s, return_when=FIRST_COMPLETED)
            if not done:
                names = ", ".join(sorted(futures[f] for f in pending)[:6])
                raise WaitTimeout(f"{what}: no task finished within {bound_s:.0f} s; still waiting for "
                                  f"{len(pending)} ({names}{', ...' if len(pending) > 6 else ''})")
            for f in done:
                yield f, f.result()
    except BaseException:
        end_pool(pool)
        raise


def wait_process(p: subprocess.Popen, bound_s: float, what: str) -> int:
    """``p``'s exit status, waiting at most ``bound_s`` seconds; after that it is killed and
    :class:`WaitTimeout` names ``what``."""
    try:
        return p.wait(timeout=bound_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise WaitTimeout(f"{what} (pid {p.pid}) did not finish within {bound_s:.0f} s: killed") from None


def build_line(what: str, seconds: float, log: Path | str | None = None) -> None:
    """The one line a build prints (on stderr): what was built, how long it took, where its log is."""
    where = f"; log {repo_relative(log)}" if log else ""
    print(f"built {what} in {seconds:.1f} s{where}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def timed_build(what: str, log: Path | str | None = None):
    """Time the block and print :func:`build_line` when it succeeds (its errors name the log)."""
    t0 = time.perf_counter()
    yield
    build_line(what, time.perf_counter() - t0, log)


def write_log(log: Path, entries: list[tuple[list[str], str]]) -> None:
    """A build log: each command line, then its output."""
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(f"$ {' '.join(map(str, cmd))}\n{out}{'' if out.endswith(chr(10)) or not out else chr(10)}\n"
                           for cmd, out in entries))

