"""`python -m fr_analyze ARGS`: the same as the `fr-analyze ARGS` command."""

import sys

from fr_analyze._cli import main

sys.exit(main())
