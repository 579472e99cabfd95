"""The documentation site stays true: every example in docs/ runs, and prints what it shows.

In each page (``docs/**/*.md``), in order:

* a ``python`` block runs, in one namespace per page (so a page reads as one script),
  from the repository root;
* a ``bash`` block runs each of its ``polars-rankeval ...`` lines, as
  ``python -m polars_rankeval ...``, and expects exit status 0 (other lines, such as
  ``pip install``, are instructions and are not run here);
* a block right after it fenced as ``text title="output"`` is what the code prints:
  the printed text must equal it (trailing spaces aside);
* a block preceded by ``<!-- not run: REASON -->`` is skipped by design (it needs a
  cluster or files the reader has); the reason must name a tested script or test.

The API reference pages (``docs/api``) hold only ``:::`` directives; their docstring
examples run as doctests. Every public name of ``polars_rankeval`` must appear there.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

import polars_rankeval as pr

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "api" not in p.relative_to(DOCS).parts)
FENCE = re.compile(  # the line before a fence, the fence's info string, its body
    r"(?P<before>^[^\n]*\n)?^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n"
    r"(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
OPTIONAL = {"pandas": "spark"}  # modules of an extra other than [test] -> the extra
NOT_RUN = re.compile(r"<!-- not run: (?P<reason>.+?) -->")


@dataclass
class Block:
    language: str
    title: str
    code: str
    line: int
    not_run: str | None


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        info = m.group("info").strip()
        language = info.split(" ", 1)[0]
        title = m.group("info").partition('title="')[2].partition('"')[0]
        code = "\n".join(
            line.removeprefix(m.group("indent")) for line in m.group("body").splitlines()
        )
        skip = NOT_RUN.search(m.group("before") or "")
        line = text.count("\n", 0, m.start("body"))
        found.append(Block(language, title, code, line, skip and skip.group("reason")))
    return found


def run_command(line: str) -> str:
    args = shlex.split(line)
    assert args[0] == "polars-rankeval"
    done = subprocess.run(
        [sys.executable, "-m", "polars_rankeval", *args[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{line}\n{done.stderr}"
    return done.stdout


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_examples_run_and_print_what_they_show(
    page: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    printed: str | None = None  # the output of the last block run, for an output block
    for block in blocks(page):
        where = f"{page.relative_to(ROOT)}:{block.line}"
        if block.title == "output":
            assert printed is not None, f"{where}: an output block follows no code that ran"
            assert _lines(printed) == _lines(block.code), where
            printed = None
            continue
        printed = None
        if block.not_run is not None:
            assert re.search(r"(examples|tests)/\w+\.py", block.not_run), where
            continue
        if block.language == "python":
            out = io.StringIO()
            try:
                with pl.Config(restore_defaults=True), contextlib.redirect_stdout(out):
                    exec(compile(block.code, where, "exec"), namespace)
            except ModuleNotFoundError as error:
                if error.name not in OPTIONAL:
                    raise
                pytest.skip(f"{where} needs {error.name}: the [{OPTIONAL[error.name]}] extra")
            printed = out.getvalue()
        elif block.language == "bash":
            commands = [x for x in block.code.splitlines() if x.startswith("polars-rankeval ")]
            printed = "".join(run_command(x) for x in commands) if commands else None


def test_every_public_name_is_in_the_api_reference() -> None:
    reference = "\n".join(p.read_text() for p in (DOCS / "api").glob("*.md"))
    documented = set(re.findall(r"^::: polars_rankeval\.(?:\w+\.)*?(\w+)$", reference, re.M))
    assert set(pr.__all__) - documented == set()


def test_output_blocks_are_checked() -> None:
    """The runner above compares something: the guides do show checked output."""
    titles = [b.title for page in PAGES for b in blocks(page)]
    assert titles.count("output") >= 5
