"""The layers stay apart: the engine imports nothing of the API boundary or the catalogue,
the catalogue nothing of the engine but what its formulas read, and every module of the
package imports on its own, first (no import cycle)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import polars_rankeval

PACKAGE = Path(polars_rankeval.__file__).parent
BOUNDARY_AND_CATALOGUE = (
    "polars_rankeval.evaluate",
    "polars_rankeval.options",
    "polars_rankeval.inputs",
    "polars_rankeval.pieces",
    "polars_rankeval.measures",
    "polars_rankeval.catalogue",
    "polars_rankeval.declare",
    "polars_rankeval.metrics",
)
CATALOGUE = ["catalogue.py", "measures.py", "declare.py", *(f"metrics/{p.name}" for p in
             sorted((PACKAGE / "metrics").glob("*.py")))]  # fmt: skip
FEATURES = ("polars_rankeval.engine.shape", "polars_rankeval.engine.features",
            "polars_rankeval.engine.plan")  # fmt: skip


def imported(path: Path) -> set[str]:
    """Every module a file imports (``from x import y`` counts x and x.y), anywhere in it,
    ``TYPE_CHECKING`` blocks included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def within(name: str, modules: tuple[str, ...]) -> bool:
    return any(name == m or name.startswith(f"{m}.") for m in modules)


def test_the_engine_imports_nothing_of_the_boundary_or_the_catalogue():
    engine = sorted((PACKAGE / "engine").glob("*.py"))
    assert len(engine) >= 8
    wrong = {
        f"engine/{path.name}": sorted(
            n for n in imported(path) if within(n, BOUNDARY_AND_CATALOGUE)
        )
        for path in engine
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_the_catalogue_reads_of_the_engine_only_its_features():
    wrong = {}
    for name in CATALOGUE:
        engine = {n for n in imported(PACKAGE / name) if within(n, ("polars_rankeval.engine",))}
        outside = sorted(n for n in engine if not within(n, FEATURES))
        if outside:
            wrong[name] = outside
    assert wrong == {}


def test_every_module_imports_first_without_a_cycle():
    modules = sorted(
        "polars_rankeval." + ".".join(p.relative_to(PACKAGE).with_suffix("").parts)
        for p in PACKAGE.rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    )
    assert len(modules) > 40
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('polars_rankeval')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError as error:\n"
        "        if (error.name or '').startswith('polars_rankeval'):\n"
        "            raise\n"
        "        print('optional', name, error.name)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_importing_the_library_imports_no_scipy():
    """scipy takes about a second to import: the modules import it where they use it, so
    that the CLI and a first ``import polars_rankeval`` pay only for Polars."""
    script = (
        "import sys, polars_rankeval\n"
        "print(sorted(m for m in sys.modules if m.startswith('scipy')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
