"""``python -m agentkit.doctor`` (``make preflight``): the checks without the rest of the client."""

from __future__ import annotations

import sys

from agentkit.commands.doctor import main

sys.exit(main())
