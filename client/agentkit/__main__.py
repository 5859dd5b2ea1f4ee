"""``python -m agentkit`` = the ``agentkit`` command."""

import sys

from agentkit.cli import main

sys.exit(main())
