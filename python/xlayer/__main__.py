"""``python -m xlayer`` is the ``xlayer`` command."""

import sys

from xlayer.cli import console

sys.exit(console())
