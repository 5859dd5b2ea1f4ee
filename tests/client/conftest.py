"""Client tests: ``agentkit`` importable from ``client/`` even without ``pip install -e ./client``."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLIENT_DIR = ROOT / "client"

if importlib.util.find_spec("agentkit") is None:  # make setup installs it; a bare checkout may not have
    sys.path.insert(0, str(CLIENT_DIR))


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for an ``agentkit`` / ``python -m agentkit`` subprocess: the client first on the path."""
    path = os.pathsep.join(p for p in (str(CLIENT_DIR), str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def paginator_over(method: Any, client: Any, operation: str) -> Any:
    """botocore's own paginator for ``operation`` (its model from ``paginators-1.json``) driving ``method``: for test
    clients that route some calls of one operation to moto and others to a Stubber."""
    import botocore.paginate
    import botocore.session

    service = client.meta.service_model
    config = botocore.session.get_session().get_paginator_model(service.service_name).get_paginator(operation)
    return botocore.paginate.Paginator(method, config, service.operation_model(operation))
