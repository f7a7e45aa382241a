"""``python -m alphagp``: the ``alphagp`` command."""

import sys

from .cli import main

sys.exit(main())
