"""Entry point for ``python -m bindlab``."""

import sys

from bindlab.cli import main

sys.exit(main())
