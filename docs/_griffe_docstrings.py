"""Griffe extension for the API reference: numpydoc as the package writes it, in Markdown.

The docstrings are written for ``pytest --doctest-modules`` and numpydoc readers; two
habits of theirs need a translation for mkdocstrings:

* reST roles and the math directive: ``:func:`evaluate``` becomes ```evaluate```,
  ``:math:`|R|``` becomes ``$|R|$`` and ``.. math:: ...`` (with its indented
  continuation lines) a ``$$`` block, rendered by MathJax (pymdownx.arithmatex);
* parameters documented together (``query, doc, score : str``): griffe gives every
  name the first one's default and type, so each name takes its own from the
  signature.

Only the rendered copy changes; the source docstrings stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):`~?([^`]+)`")
_INLINE_MATH = re.compile(r":math:`([^`]+)`")
_MATH_BLOCK = re.compile(r"^\.\. math:: ?(.*(?:\n[ \t]+\S.*)*)", re.MULTILINE)


def _math_block(match: re.Match[str]) -> str:
    lines = [line.strip() for line in match.group(1).splitlines()]
    return "$$\n" + "\n".join(lines) + "\n$$"


def to_markdown(text: str) -> str:
    """reST roles and math in a docstring -> Markdown code spans and arithmatex math."""
    text = _MATH_BLOCK.sub(_math_block, text)
    text = _INLINE_MATH.sub(lambda m: f"${m.group(1)}$", text)
    return _ROLE.sub(lambda m: f"`{m.group(1)}`", text)


def _own_defaults(func: griffe.Function) -> None:
    for section in func.docstring.parsed if func.docstring else ():
        if section.kind is not griffe.DocstringSectionKind.parameters:
            continue
        for item in section.value:
            if item.name in func.parameters:
                item.value = func.parameters[item.name].default
                item.annotation = func.parameters[item.name].annotation or item.annotation


class NumpydocAsMarkdown(griffe.Extension):
    """Applies :func:`to_markdown` to every docstring, then fixes grouped parameters."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = to_markdown(obj.docstring.value)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Once every module is loaded (and so every docstring translated)."""
        todo: list[griffe.Object] = [pkg]
        while todo:
            obj = todo.pop()
            if isinstance(obj, griffe.Function) and obj.docstring is not None:
                _own_defaults(obj)
            todo.extend(m for m in obj.members.values() if not m.is_alias)
