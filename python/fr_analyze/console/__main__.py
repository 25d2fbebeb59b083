"""python -m fr_analyze.console [serve options]: what `fr-analyze serve` runs."""

import sys

from fr_analyze.console import main

sys.exit(main())
