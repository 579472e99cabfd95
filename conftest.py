"""Every test, and every doctest of the package, starts from the built-in catalogue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from polars_rankeval.measures import ALIASES, REGISTRY


@pytest.fixture(autouse=True)
def _builtin_catalogue() -> Iterator[None]:
    """Measures a test declares (``pr.define_measure``) are forgotten after it."""
    registry, aliases = dict(REGISTRY), dict(ALIASES)
    yield
    REGISTRY.clear()
    REGISTRY.update(registry)
    ALIASES.clear()
    ALIASES.update(aliases)
