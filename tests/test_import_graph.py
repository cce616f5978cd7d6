"""The house rules DESIGN.md states, checked on the source: imports point one way (no cycle, not
even one closed by an import inside a function) and no module uses another's private names."""

from __future__ import annotations

import ast
import doctest
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "bertology"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def imports(module: str) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for every import statement, at any depth."""
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            for alias in node.names:  # `from . import x` imports the submodule x when there is one
                sub = f"{target}.{alias.name}"
                found.append((sub, []) if sub in MODULES else (target, [alias.name]))
    return found


def graph() -> dict[str, set[str]]:
    return {m: {target for target, _ in imports(m) if target in MODULES and target != m} for m in MODULES}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph as a path [a, b, …, a], or None.

    >>> find_cycle({"a": {"b"}, "b": {"a"}})
    ['a', 'b', 'a']
    >>> find_cycle({"a": {"b"}, "b": set()}) is None
    True
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_checker_finds_a_cycle_through_a_package_init():
    assert find_cycle({"p": {"p.a"}, "p.a": {"p.b"}, "p.b": {"p"}}) == ["p", "p.a", "p.b", "p"]


def test_imports_point_one_way():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_takes_another_modules_private_names(module):
    borrowed = [
        f"{target}.{name}"
        for target, names in imports(module)
        if target in MODULES and target != module
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not borrowed, f"{module} imports private names {borrowed}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_reaches_into_another_modules_private_attributes(module):
    aliases = {}  # local name → bertology module, for `import bertology.x as y` and `from . import x`
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(module, node)
            aliases.update(
                {a.asname or a.name: f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES}
            )
        elif isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in MODULES})
    reached = [
        f"{aliases[n.value.id]}.{n.attr}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id in aliases
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
    ]
    assert not reached, f"{module} uses private names {reached}"


# ---- layers and sizes: the order DESIGN.md draws, and the files that must stay small -------------------

# Lowest first. A module may import from its own layer's floor modules and from any lower layer; the
# packages of one layer (nn, tokenizers, viz; demo, serve) do not import each other.
LAYERS = [
    ("io", "options", "progress", "tables", "readers", "hardware", "stats"),
    ("nn", "tokenizers", "viz"),
    ("wordvec",),
    ("models",),
    ("data",),
    ("train",),
    ("tasks",),
    ("export",),
    ("demo", "serve"),
    ("cli",),
    ("__main__",),
]
RANK = {part: i for i, layer in enumerate(LAYERS) for part in layer}
# the files a reader opens first, held to the size they were designed at (issue 42)
MAX_LINES = {"train/*.py": 400, "data/store.py": 250, "models/xlnet.py": 400}


def part_of(module: str) -> str | None:
    """The top-level part of bertology a module belongs to (None: the package's own __init__, the API facade)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_part_of_the_package_has_a_layer():
    parts = {part_of(m) for m in MODULES} - {None}
    assert parts <= set(RANK), f"not in LAYERS: {sorted(parts - set(RANK))}"


def against_layers(edges: dict[str, set[str]]) -> list[str]:
    """The imports of `edges` that point up the layers, or sideways between two packages of one layer.

    >>> against_layers({"bertology.train.start": {"bertology.tasks.readers", "bertology.models.config"}})
    ['bertology.train.start → bertology.tasks.readers']
    >>> against_layers({"bertology.viz.attention": {"bertology.nn.attention"}, "bertology.io": {"bertology.tables"}})
    ['bertology.viz.attention → bertology.nn.attention']
    """
    return sorted(
        f"{a} → {b}"
        for a, targets in edges.items()
        for b in targets
        if part_of(a) is not None
        and part_of(b) is not None
        and part_of(a) != part_of(b)
        and (RANK[part_of(b)] > RANK[part_of(a)] or (RANK[part_of(b)] == RANK[part_of(a)] > 0))
    )


def test_the_layer_check_finds_upward_and_sideways_imports():
    result = doctest.DocTestRunner().run(doctest.DocTestFinder().find(against_layers)[0])
    assert result.attempted == 2 and result.failed == 0


def test_imports_point_down_the_layers():
    upward = against_layers(graph())
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


@pytest.mark.parametrize("pattern", sorted(MAX_LINES))
def test_files_stay_within_their_size(pattern):
    over = {
        str(p.relative_to(PACKAGE)): n
        for p in sorted(PACKAGE.glob(pattern))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES[pattern]
    }
    assert not over, f"over {MAX_LINES[pattern]} lines: {over}"
