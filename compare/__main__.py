import sys

from .cli import main

# Dask's worker processes start by spawn, which imports this module again: only the command runs main().
if __name__ == "__main__":
    sys.exit(main())
