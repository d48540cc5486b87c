"""The import-layer check of ``make lint``: folders import only downward, and nothing imports in a
circle — in the Python package and among the shim's C files.

Python: every import of ``aimux_ops`` (module top, function-local and ``TYPE_CHECKING`` imports
alike) is resolved to the module it names; each module belongs to the floor of its folder
(``FLOORS``, top first). An import of a module on a higher floor is an upward import; a cycle of
modules (on one floor or across floors) is a circle. A module of a folder no floor names is an
error too, so a new folder must be placed.

C: a file of ``native/src`` that uses a name another file there defines (a function, macro, type
or file-scope variable), while that file uses one of its names, is a circle; a shared name
belongs in a header both include.

    python lint/layers.py [--package DIR] [--c-dir DIR]

prints one line per violation and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

#: The floors of the package, top first; a module may import its own floor and the floors below.
#: ``""`` is the package's own ``__init__`` (the Python API) and its private top-level modules are
#: placed by name.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("", "api", "codegen", "native", "gateway"),
    ("boundary",),
    ("streams",),
    ("ops",),
    ("providers",),
    ("http",),
    ("wire",),
    ("errors",),
    ("_speedups", "guest", "_version", "_lazy"),
)


def floor_of(module: str, package: str) -> int | None:
    """The floor index of ``module`` (a dotted name inside ``package``), None when unplaced."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else ""
    for index, names in enumerate(FLOORS):
        if head in names:
            return index
    return None


def _modules(root: Path) -> dict[str, Path]:
    package = root.name
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).with_suffix("")
        name = ".".join(rel.parts)
        if name.endswith(".__init__"):
            name = name[: -len(".__init__")]
        if name.split(".")[0] == package:
            found[name] = path
    return found


def _extensions(root: Path) -> set[str]:
    """The dotted names of the package's C extension modules (a ``.c`` source or a built ``.so``):
    leaves, imported by name like a module."""
    names: set[str] = set()
    for path in root.rglob("*"):
        if path.suffix in (".c", ".so"):
            rel = path.relative_to(root.parent)
            stem = path.name.split(".")[0]
            names.add(".".join((*rel.parts[:-1], stem)))
    return names


def _imports(
    name: str, path: Path, modules: dict[str, Path], leaves: frozenset[str] = frozenset()
) -> set[str]:
    """The modules of the package that ``name`` (at ``path``) imports, anywhere in its code."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        candidates: list[str] = []
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = here[: len(here) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            # ``from X import name``: the submodule ``X.name`` when there is one, else ``X``
            candidates = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
                if f"{base}.{alias.name}" not in leaves
            ]
        elif isinstance(node, ast.Call) and _is_import_call(node):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                candidates = [arg.value]
        for target in candidates:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
    # importing a submodule runs its package's __init__ too, but that is the language, not an
    # edge of ours: only the names written count
    return targets


def _is_import_call(node: ast.Call) -> bool:
    func = node.func
    named = (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )
    return named and bool(node.args)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def check_package(root: Path) -> list[str]:
    """Every upward import, unplaced module and circle of the package at ``root``."""
    package = root.name
    modules = _modules(root)
    leaves = frozenset(_extensions(root))
    edges = {name: _imports(name, path, modules, leaves) for name, path in modules.items()}
    problems: list[str] = []
    for name in sorted(modules):
        floor = floor_of(name, package)
        if floor is None:
            problems.append(f"{name}: its folder is on no floor (lint/layers.py FLOORS)")
            continue
        for target in sorted(edges[name]):
            target_floor = floor_of(target, package)
            if target_floor is not None and target_floor < floor:
                problems.append(f"{name} imports {target} upward (floor {floor} -> {target_floor})")
    for component in _cycles(edges):
        problems.append("import circle: " + " <-> ".join(component))
    return problems


_C_DEFINED = re.compile(
    r"^(?:#\s*define\s+(\w+)"  # a macro
    r"|(?:static\s+|extern\s+|inline\s+|const\s+|struct\s+|unsigned\s+|_Atomic\s+)*"
    r"[A-Za-z_][\w\s\*]*?\b(\w+)\s*(?:\(|=|;|\[))",  # a function or a file-scope variable
    re.MULTILINE,
)
_C_TYPES = re.compile(r"\b(?:typedef\b[^;]*?\b(\w+)\s*;|(?:struct|enum|union)\s+(\w+)\s*\{)", re.S)
_C_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
#: words that are C's, never a file's own name
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while _Bool _Atomic _Thread_local bool size_t ssize_t int8_t "
    "int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t uintptr_t NULL".split()
)
_C_NOISE = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])'", re.S)


def _c_names(text: str) -> tuple[set[str], set[str]]:
    """(names defined at file scope, words used) of one C file, comments and strings removed."""
    code = _C_NOISE.sub(" ", text)
    defined: set[str] = set()
    depth = 0
    for line in code.splitlines(keepends=True):
        if depth == 0:
            for match in _C_DEFINED.finditer(line):
                defined.update(g for g in match.groups() if g)
        depth += line.count("{") - line.count("}")
    for match in _C_TYPES.finditer(code):
        defined.update(g for g in match.groups() if g)
    return defined - _C_KEYWORDS, set(_C_WORD.findall(code)) - _C_KEYWORDS


def check_c(c_dir: Path) -> list[str]:
    """The circles among the C files of ``c_dir``: A uses a name B defines and B one of A's."""
    files = sorted(p for p in c_dir.iterdir() if p.suffix == ".c")
    names = {p: _c_names(p.read_text(encoding="utf-8")) for p in files}
    owner: dict[str, set[Path]] = {}
    for path, (defined, _) in names.items():
        for name in defined:
            owner.setdefault(name, set()).add(path)
    uses: dict[Path, set[Path]] = {p: set() for p in files}
    for path, (defined, used) in names.items():
        for word in used - defined:
            for other in owner.get(word, ()):
                if len(owner[word]) == 1 and other != path:
                    uses[path].add(other)
    problems = []
    for i, a in enumerate(files):
        for b in files[i + 1 :]:
            if b in uses[a] and a in uses[b]:
                problems.append(
                    f"C circle: {a.name} <-> {b.name} (each uses names the other defines)"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=here / "aimux_ops")
    parser.add_argument("--c-dir", type=Path, default=here / "native" / "src")
    args = parser.parse_args(argv)
    problems = check_package(args.package.resolve()) + check_c(args.c_dir.resolve())
    for problem in problems:
        print(problem)
    if problems:
        print(f"lint/layers.py: {len(problems)} violation(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
