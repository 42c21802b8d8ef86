"""``python -m jitterlab.cli``: the ``jitterlab`` command."""

import sys

from . import main

sys.exit(main())
