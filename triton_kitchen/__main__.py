"""``python -m triton_kitchen``: the command line lives in :mod:`triton_kitchen.cli.main`."""

import sys

from triton_kitchen.cli.main import build_parser, cmd_serve, main  # noqa: F401  (importable from here, as before)

if __name__ == "__main__":
    sys.exit(main())
