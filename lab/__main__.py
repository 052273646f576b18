"""``python -m lab``: runs the command line (lab/commands/main.py)."""

import sys

from lab.commands.main import main

sys.exit(main())
