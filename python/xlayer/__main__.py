"""``python -m xlayer`` is the ``xlayer`` command."""

import sys

from xlayer.cli import main

sys.exit(main())
