"""The layers of docs/ARCHITECTURE.md, checked on every import in src/ (function-level and
TYPE_CHECKING ones included): a module imports only from its own layer or below, and nothing
generic imports a family folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

from babelprobe.families import FAMILIES

SRC = Path(__file__).resolve().parents[1] / "src" / "babelprobe"

# lowest first; a module belongs to the layer of its longest matching prefix
LAYERS: list[list[str]] = [
    # text: the language layer (babelprobe.text), generic, below data/, analysis/ and the families
    ["versions", "text", "languages", "redaction", "data", "data.validation", "data.tables", "data.perturbations", "data.langid", "data.releases", "analysis",
     "models.base"],
    ["models", "store", "config", "data.fetch"],
    ["report", "report.sections", "report.figures", "report.terminal", "report.lang_family", "commands"],
    ["families.base", "families", "stored_runs", "request_runner", "executors"],
    ["families.*"],  # one folder per family
    ["execute_run", "report.html", "report.export", "suite"],
    ["cli", "cli_options", "suite_cli", "__main__", "__init__"],
]


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


def layer_of(module: str) -> int:
    best, best_len = None, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if prefix == "families.*":
                matches = module.startswith("families.") and module.split(".")[1] != "base"
                length = len("families.x") if matches else -1
            else:
                matches = module == prefix or module.startswith(prefix + ".")
                length = len(prefix) if matches else -1
            if matches and length > best_len:
                best, best_len = index, length
    if best is None:
        raise AssertionError(f"{module} is in no layer of tests/test_layers.py")
    return best


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("babelprobe"):
            base = node.module.removeprefix("babelprobe").lstrip(".")
            package = SRC.joinpath(*base.split(".")) if base else SRC
            if package.is_dir():  # from babelprobe import store; from babelprobe.report import figures
                found += [(node.lineno, f"{base}.{a.name}".lstrip(".") if (package / f"{a.name}.py").exists()
                           or (package / a.name).is_dir() else (base or "__init__")) for a in node.names]
            else:
                found.append((node.lineno, base))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name.removeprefix("babelprobe.")) for a in node.names
                      if a.name.startswith("babelprobe.")]
    return found


def upward_imports() -> list[str]:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        me = module_name(path)
        if me == "__init__":
            continue  # the public API re-exports every layer (lazily)
        mine = layer_of(me)
        for line, target in imports(path):
            if layer_of(target) > mine:
                bad.append(f"{path.relative_to(SRC)}:{line} {me} (layer {mine}) imports {target} "
                           f"(layer {layer_of(target)})")
    return bad


def test_no_import_points_up_a_layer():
    assert upward_imports() == []


def import_graph() -> nx.DiGraph:
    """Every module -> every babelprobe module it imports, at any depth of the file."""
    graph = nx.DiGraph()
    for path in sorted(SRC.rglob("*.py")):
        me = module_name(path)
        graph.add_node(me)
        graph.add_edges_from((me, target) for _, target in imports(path) if target != me)
    return graph


def import_cycles() -> list[list[str]]:
    graph = import_graph()
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def test_no_import_cycles():
    assert import_cycles() == []


def family_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "families" and len(parts) > 2 else None


def test_no_family_imports_another_family():
    bad = [f"{path.relative_to(SRC)}:{line} imports {target}" for path in sorted(SRC.rglob("*.py"))
           for line, target in imports(path)
           if family_of(module_name(path)) and family_of(target) not in (None, family_of(module_name(path)))]
    assert bad == []


def test_no_module_level_import_below_code():
    """An import at the bottom of a file (``# noqa: E402``) hides a circle; imports open the file."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        body = ast.parse(path.read_text()).body
        seen_code = False
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                if seen_code:
                    bad.append(f"{path.relative_to(SRC)}:{node.lineno}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)):
                seen_code = True  # (a call such as matplotlib.use("Agg") may precede an import)


def test_the_language_layer_imports_only_the_lowest_layer():
    """babelprobe.text is called by every family and by data/: it imports nothing above itself
    (no data/, models, analysis, report, family)."""
    allowed = {"text", "languages", "versions"}
    bad = [f"{path.relative_to(SRC)}:{line} imports {target}" for path in sorted((SRC / "text").rglob("*.py"))
           for line, target in imports(path) if target.split(".")[0] not in allowed]
    assert bad == []


def test_generic_modules_do_not_import_a_family_folder():
    bad = [f"{path.relative_to(SRC)}:{line} imports {target}" for path in sorted(SRC.rglob("*.py"))
           if not module_name(path).startswith("families.") and module_name(path) not in ("__init__",)
           for line, target in imports(path)
           if layer_of(target) == layer_of("families.x") and layer_of(module_name(path)) < layer_of("execute_run")]
    assert bad == []


@pytest.mark.parametrize("name", list(FAMILIES))  # the built-in ones: their folders are in src/
def test_each_family_lives_in_one_folder(name):
    folder = SRC / "families" / name
    assert (folder / "family.py").is_file() and (folder / "config.py").is_file()
    for generic in ("data", "analysis", "report"):
        assert not list((SRC / generic).glob(f"{name}*.py")), f"{generic}/ holds a {name} module"


def test_no_source_folder_is_named_like_build_output():
    """ruff and structure tools skip folders named build/dist/... as build output (they once hid
    families/owl/build/, 1,302 lines, from every check)."""
    skipped = {"build", "dist", "_build", "site-packages", "node_modules", "venv", ".venv"}
    assert [p for p in SRC.rglob("*") if p.is_dir() and p.name in skipped] == []


def test_no_comment_cites_the_projects_tracker():
    """The tracker is not in the repository: a comment says why itself ("its issue #N" of another
    project, which a reader can look up, is fine)."""
    cited = re.compile(r"(?<!its )\bissues? #?\d+", re.IGNORECASE)
    bad = [f"{path.relative_to(SRC)}:{number}" for path in sorted(SRC.rglob("*.py"))
           for number, line in enumerate(path.read_text().splitlines(), 1) if cited.search(line)]
    assert bad == []
