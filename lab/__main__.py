"""``python -m lab``: runs the command line (lab/cli.py)."""

import sys

from lab.cli import main

sys.exit(main())
