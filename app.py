"""CDK entry point: read context, validate config, build the stack, add cdk-nag, synth.

Context (``cdk.json`` or ``-c``): ``stage`` (dev | prod) and the ``agentkit`` object described in
``infra/config.py``. Account/Region come from ``agentkit.account``/``agentkit.region`` or the CLI's
``CDK_DEFAULT_ACCOUNT``/``CDK_DEFAULT_REGION``. No resources are defined here.
"""

from __future__ import annotations

import os
import sys

import aws_cdk as cdk

from infra import nag
from infra.config import ConfigError, load_config
from infra.stack import AgentKitStack


def main() -> None:
    # The built-in CloudFormation validation plugin costs ~2 s per synth and duplicates cfn-lint, which
    # `make lint` and tests/infra/test_lint.py run on every template; cdk-nag stays on (nag.add_checks).
    app = cdk.App(builtin_cloud_formation_validation=False)
    stage = str(app.node.try_get_context("stage") or "dev")
    try:
        config = load_config(app.node.try_get_context("agentkit"), stage=stage)
    except ConfigError as exc:
        sys.exit(f"invalid config: {exc}")
    env = cdk.Environment(
        account=config.account or os.environ.get("CDK_DEFAULT_ACCOUNT"),
        region=config.region or os.environ.get("CDK_DEFAULT_REGION") or "us-east-1",
    )
    AgentKitStack(app, f"AgentKit-{stage}", config=config, env=env, description="AgentCore Claude Kit")
    nag.add_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
