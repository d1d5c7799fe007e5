"""Count a package's import graph: modules, import edges between them, and internal layers.

``python tools/import_graph.py hybridai.quantum`` prints the number of modules under the package, the number of
distinct module-to-module import edges inside it (every ``import``/``from ... import`` statement, at any depth in
a function too), and the number of internal layers: the length of the longest chain of imports between its
modules after import cycles are merged (a module that imports nothing inside the package is layer 1).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def modules(package: str) -> dict[str, Path]:
    root = Path(__import__(package, fromlist=["_"]).__file__).parent
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def edges(found: dict[str, Path]) -> set[tuple[str, str]]:
    result = set()
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    result.add((name, target))
                    break
    return result


def layers(found: dict[str, Path], graph: set[tuple[str, str]]) -> int:
    """Longest import chain, counted in strongly connected components (Tarjan, then a longest path)."""
    adjacent = {name: [b for a, b in graph if a == name] for name in found}
    index, low, stack, on_stack, component = {}, {}, [], set(), {}
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in adjacent[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component[w] = v
                if w == v:
                    break

    sys.setrecursionlimit(10000)
    for v in found:
        if v not in index:
            connect(v)
    depth: dict[str, int] = {}

    def height(c: str) -> int:
        if c not in depth:
            depth[c] = 0
            below = {component[w] for v in found if component[v] == c for w in adjacent[v]} - {c}
            depth[c] = 1 + max((height(w) for w in below), default=0)
        return depth[c]

    return max(height(c) for c in set(component.values()))


def main() -> None:
    package = sys.argv[1] if len(sys.argv) > 1 else "hybridai.quantum"
    found = modules(package)
    graph = edges(found)
    print(f"{package}: {len(found)} modules, {len(graph)} import edges, {layers(found, graph)} internal layers")


if __name__ == "__main__":
    main()
