"""``python -m polars_rankeval``: the same command line as ``polars-rankeval``."""

import sys

from polars_rankeval.cli import main

if __name__ == "__main__":
    sys.exit(main())
