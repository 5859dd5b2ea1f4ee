"""Webhook Lambda tests. The Lambda code imports its siblings by plain name (``import trackers``), as in
the Lambda runtime, so its directory goes on ``sys.path`` before any test module here is imported."""

import sys
from pathlib import Path

WEBHOOK_DIR = Path(__file__).resolve().parents[3] / "infra" / "functions" / "webhook"
if str(WEBHOOK_DIR) not in sys.path:
    sys.path.insert(0, str(WEBHOOK_DIR))
