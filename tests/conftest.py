"""Shared fixtures: the test data shipped in ``tests/data`` (see its README.md).

Every test reads only inside the repository, so a fresh clone runs the whole suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def trec_eval_data() -> Path:
    """trec_eval 9.0.4's own test suite: qrels, runs and expected outputs (README.md lists
    the command behind each output)."""
    path = DATA / "trec_eval-9.0.4"
    if not (path / "out.test.aq").is_file():
        msg = f"trec_eval test data missing at {path}: it ships with the repository"
        raise FileNotFoundError(msg)
    return path
