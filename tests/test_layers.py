"""Layers hold: no module imports from a later layer, and no import cycle within a layer."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gpusizer"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("units", "errors", "yaml_reader", "bounds", "input_files"),
    ("formats", "stack"),
    ("sheet", "sheet_presets"),
    ("model",),
    ("catalog",),
    ("memory",),
    ("evidence",),
    ("simulate", "measure", "quality"),
    ("decision",),
    ("report",),
    ("pipeline", "fit", "launch"),
    ("cli", "web", "api", "__main__"),
)
"""The order of the stages (issue 10, point 6): a module may import its own layer's modules and
earlier layers', never a later layer's. ``gpusizer/__init__`` (the package root) is exempt: it
only re-exports the API lazily."""


def _layer_of(top: str) -> int:
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"gpusizer.{top} is in no layer: add it to LAYERS")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks (imports for annotations only)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _imports(path: Path) -> list[tuple[int, str, bool]]:
    """Every gpusizer module this file imports, at any depth (deferred imports included):
    (line, module, annotation-only)."""
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = _type_checking_lines(tree)
    out = []
    for node in ast.walk(tree):
        flag = node.lineno in typing_only if hasattr(node, "lineno") else False
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name, flag) for a in node.names
                    if a.name.startswith("gpusizer")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("gpusizer"):
                continue
            if node.module is None:
                # ``from . import x``: each name may be a module
                out += [(node.lineno, f"{target}.{a.name}", flag) for a in node.names]
            else:
                out.append((node.lineno, target, flag))
    return out


def _graph() -> dict[str, list[tuple[int, str, bool]]]:
    """Module → (line, imported module, annotation-only) for every gpusizer import; a name
    imported from a package (``from . import __version__``) counts as an import of that
    package."""
    raw = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}

    def resolve(target: str) -> str:
        while target not in raw and "." in target:
            target = target.rpartition(".")[0]
        return target

    return {m: [(line, resolve(t), flag) for line, t, flag in imps] for m, imps in raw.items()}


def _top(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_no_import_from_a_later_layer():
    backward = []
    for mod, imports in _graph().items():
        top = _top(mod)
        if top is None:
            continue
        for line, target, _ in imports:
            ttop = _top(target)
            if ttop is None or ttop == top:
                continue
            if _layer_of(ttop) > _layer_of(top):
                backward.append(f"{mod}:{line} imports {target}")
    assert not backward, "imports from a later layer:\n" + "\n".join(backward)


def test_no_import_cycle_between_packages_of_one_layer():
    edges = {m: {t for _, t, _ in imps if t != m} for m, imps in _graph().items()}
    # cycles between top-level packages of the same layer (a package's own modules may cycle
    # through their package __init__ re-exports, which Python resolves in import order)
    tops: dict[str, set[str]] = {}
    for m, targets in edges.items():
        a = _top(m)
        for t in targets:
            b = _top(t)
            if a and b and a != b and _layer_of(a) == _layer_of(b):
                tops.setdefault(a, set()).add(b)
    cycles = [f"{a} ↔ {b}" for a, bs in tops.items() for b in bs if a in tops.get(b, ()) and a < b]
    assert not cycles, "import cycles within a layer: " + ", ".join(cycles)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
            elif nxt not in index:
                index[nxt] = low[nxt] = counter
                counter += 1
                stack.append(nxt)
                on.add(nxt)
                work.append((nxt, iter(sorted(edges.get(nxt, ())))))
            elif nxt in on:
                low[node] = min(low[node], index[nxt])
    return out


def test_no_module_import_cycle():
    """No circle of imports between modules at run time. Left out: imports for annotations
    only (``if TYPE_CHECKING:``, which the layer test still counts), and edges into a package's
    ``__init__`` from its own modules (its re-exports)."""
    graph = _graph()
    packages = {m for m in graph if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}
    edges = {m: {t for _, t, typing_only in imps if t != m and not typing_only
                 and not (t in packages and m.startswith(t + "."))}
             for m, imps in graph.items()}
    cycles = _cycles(edges)
    assert not cycles, "import cycles: " + "; ".join(" → ".join(c) for c in cycles)
