"""`python -m bot.cli` runs the `rltracker` command."""

import sys

from bot.cli import main

if __name__ == "__main__":
    sys.exit(main())
