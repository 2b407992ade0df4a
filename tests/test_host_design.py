"""The host package's shape (issue 25, point 11): its modules import one another without a cycle
(a function-level import counts: it is a cycle that only hides until first use), and there is one
public way to get a driver, :func:`zynqflow.host.board.open_driver`."""

from __future__ import annotations

import ast
from pathlib import Path

import zynqflow.host as host

HOST = Path(host.__file__).parent
MODULES = {p.stem: ast.parse(p.read_text(), str(p)) for p in sorted(HOST.glob("*.py"))}


def _imported_host_modules(tree: ast.Module) -> set[str]:
    """The zynqflow.host modules a module imports, anywhere in it (functions included)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:                        # from .x import y / from . import x
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.level == 0 and (node.module or "").startswith("zynqflow.host."):
                out.add(node.module.split(".")[2])
            elif node.level == 0 and node.module == "zynqflow.host":
                out.update(a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("zynqflow.host."):
                    out.add(a.name.split(".")[2])
    return {m for m in out if m in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_host_modules_import_without_a_cycle():
    graph = {name: _imported_host_modules(tree) - {name} for name, tree in MODULES.items() if name != "__init__"}
    assert "driver" in graph["board"]                  # the board opens the driver ...
    assert "board" not in graph["driver"]              # ... the driver knows nothing of the board
    cycle = _cycle(graph)
    assert cycle is None, f"import cycle among zynqflow.host modules: {' -> '.join(cycle)}"


def _imports(tree: ast.Module, mod: str) -> dict[str, tuple[str, str]]:
    """Names a module binds to functions or classes of other host modules: local name -> (module, name)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in MODULES:
            out.update({a.asname or a.name: (node.module, a.name) for a in node.names})
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("zynqflow.host."):
            out.update({a.asname or a.name: (node.module.split(".")[2], a.name) for a in node.names})
    return out


def _gives(fn: ast.FunctionDef, resolve, givers: set) -> bool:
    """``fn`` returns what a driver-giving callable returned (directly, or through a local name)."""
    def giving(call):
        return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and resolve(call.func.id) in givers

    held = {t.id for node in ast.walk(fn) if isinstance(node, ast.Assign) and giving(node.value)
            for t in node.targets if isinstance(t, ast.Name)}
    return any(isinstance(node, ast.Return) and node.value is not None
               and (giving(node.value) or isinstance(node.value, ast.Name) and node.value.id in held)
               for node in ast.walk(fn))


def test_one_public_way_to_get_a_driver():
    """Every public module-level function of zynqflow.host that returns a driver (a ZqDriver it made, or
    what such a function returned): only board.open_driver. (The front ends, Accelerator and ZqOverlay,
    are classes that hold one; the pynq backend is a private alias of open_driver.)"""
    funcs = {(mod, node.name): node for mod, tree in MODULES.items() for node in tree.body
             if isinstance(node, ast.FunctionDef)}
    imports = {mod: _imports(tree, mod) for mod, tree in MODULES.items()}
    givers = {("driver", "ZqDriver")}
    grew = True
    while grew:
        new = {key for key, fn in funcs.items() if key not in givers and _gives(
            fn, lambda name, m=key[0]: (m, name) if (m, name) in funcs else imports[m].get(name), givers)}
        grew = bool(new)
        givers |= new
    public = sorted(f"{mod}.{name}" for mod, name in givers if not name.startswith("_") and (mod, name) in funcs)
    assert public == ["board.open_driver"], public
    from zynqflow.host.accelerator import BUILTIN
    from zynqflow.host.board import open_driver

    assert BUILTIN["pynq"].__name__ == "_pynq_backend" and open_driver.__doc__.startswith("**The** way")
