"""CDK entry point: read context, validate config, build the stack, add cdk-nag, synth.

Context (``cdk.json`` or ``-c``): ``stage`` (dev | prod), the ``agentkit`` object described in
``infra/config.py``, and single-setting overrides such as ``-c image_build=codebuild`` or
``-c gateway.enabled=false`` (``infra/overrides.py``). Account/Region come from ``agentkit.account``/
``agentkit.region`` or the CLI's ``CDK_DEFAULT_ACCOUNT``/``CDK_DEFAULT_REGION`` (then ``AWS_REGION``,
``AWS_DEFAULT_REGION``, then us-east-1); every inference profile is checked against that Region. No resources
are defined here.
"""

from __future__ import annotations

import os
import sys

import aws_cdk as cdk

from infra import nag
from infra.config import ConfigError
from infra.context import config_from_context
from infra.stack import AgentKitStack


def main() -> None:
    # The built-in CloudFormation validation plugin costs ~2 s per synth and duplicates cfn-lint, which
    # `make lint` and tests/infra/test_lint.py run on every template; cdk-nag stays on (nag.add_checks).
    app = cdk.App(builtin_cloud_formation_validation=False)
    try:
        config = config_from_context(app.node.get_all_context(), environ=os.environ)
    except ConfigError as exc:
        sys.exit(f"invalid config: {exc}")
    env = cdk.Environment(
        account=config.account or os.environ.get("CDK_DEFAULT_ACCOUNT"), region=config.deploy_region
    )
    AgentKitStack(app, f"AgentKit-{config.stage}", config=config, env=env, description="AgentCore Claude Kit")
    nag.add_checks(app)
    app.synth()


if __name__ == "__main__":
    main()
