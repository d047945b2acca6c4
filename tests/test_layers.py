"""The layers of docs/ARCHITECTURE.md, checked on every import in src/ (function-level and
TYPE_CHECKING ones included): a module imports only from its own layer or below, and nothing
generic imports a family folder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "babelprobe"

# lowest first; a module belongs to the layer of its longest matching prefix
LAYERS: list[list[str]] = [
    # text: the language layer (babelprobe.text), generic, below data/, analysis/ and the families
    ["versions", "text", "languages", "segmenters", "affixes", "redaction", "data", "data.validation", "data.tables", "data.perturbations", "data.langid", "analysis",
     "models.base"],
    ["models", "store", "config"],
    ["report", "report.sections", "report.figures", "report.terminal", "report.lang_family", "commands"],
    ["families.base", "families", "runs", "runner", "executors", "data.fetch"],
    ["families.*"],  # one folder per family
    ["pipeline", "report.html", "report.export", "suite"],
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


def test_the_language_layer_imports_only_the_lowest_layer():
    """babelprobe.text is called by every family and by data/: it imports nothing above itself
    (no data/, models, analysis, report, family)."""
    allowed = {"text", "languages", "segmenters", "versions"}
    bad = [f"{path.relative_to(SRC)}:{line} imports {target}" for path in sorted((SRC / "text").rglob("*.py"))
           for line, target in imports(path) if target.split(".")[0] not in allowed]
    assert bad == []


def test_generic_modules_do_not_import_a_family_folder():
    bad = [f"{path.relative_to(SRC)}:{line} imports {target}" for path in sorted(SRC.rglob("*.py"))
           if not module_name(path).startswith("families.") and module_name(path) not in ("__init__",)
           for line, target in imports(path)
           if layer_of(target) == layer_of("families.x") and layer_of(module_name(path)) < layer_of("pipeline")]
    assert bad == []


@pytest.mark.parametrize("name", ["cka", "owl", "eclektic", "memorization", "similarity"])
def test_each_family_lives_in_one_folder(name):
    folder = SRC / "families" / name
    assert (folder / "family.py").is_file() and (folder / "config.py").is_file()
    for generic in ("data", "analysis", "report"):
        assert not list((SRC / generic).glob(f"{name}*.py")), f"{generic}/ holds a {name} module"
