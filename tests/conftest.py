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


@pytest.fixture(scope="module")
def client():
    """A real Dask ``LocalCluster`` of 2 worker processes x 1 thread, per test module, and
    a client that is not the default one (so that ``client=None`` means no client)."""
    why = "dask[distributed] is not installed (pip install polars-rankeval[dask])"
    distributed = pytest.importorskip("distributed", reason=why)
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="1GiB",
    )
    with distributed.Client(cluster, set_as_default=False) as c:
        yield c
    cluster.close()
