"""What the runtime role needs so the first call of a Claude model works in a fresh account.

Bedrock starts the AWS Marketplace subscription of a third-party model on its first invocation in an account.
The caller then needs ``aws-marketplace:Subscribe`` and ``aws-marketplace:ViewSubscriptions``, otherwise the
call fails with AccessDenied ("Request access to models",
https://docs.aws.amazon.com/bedrock/latest/userguide/model-access.html). ``Subscribe`` (only it) can be limited
with the ``aws-marketplace:ProductId`` condition key to the products of the configured models ("Use product ID
condition keys to control access", https://docs.aws.amazon.com/bedrock/latest/userguide/model-access-product-ids.html,
which lists the IDs below). The model-access page lists ``Subscribe``, ``Unsubscribe`` and
``ViewSubscriptions`` as the prerequisites of a first-use subscription, so ``Unsubscribe`` is granted with
``Subscribe`` under the same product-id condition; ``ViewSubscriptions`` is granted on ``*``. None of the three
has resource types in the Service Authorization Reference ("Actions, resources, and condition keys for AWS
Marketplace"), so ``*`` is the only resource IAM matches.

The Claude Code CLI lists the system-defined inference profiles at every start and resolves the one it uses
(Claude Code's Bedrock IAM docs): ``bedrock:ListInferenceProfiles`` and ``bedrock:GetInferenceProfile``. Get
is limited to the configured profiles. ``ListInferenceProfiles`` supports no resource types in the Service
Authorization Reference ("Actions, resources, and condition keys for Amazon Bedrock"), so IAM matches it only
on ``"*"``: scoped to profile ARNs, the CLI's start-up lookup would be denied (it tolerates that, but then
cannot resolve the profile's Regions). ``tests/infra/test_iam_sar.py`` checks every statement against an
offline copy of that reference.

What IAM cannot do: Anthropic's one-time "use case" form (per account, or once in an organization's
management account). ``agentkit doctor`` checks it (``GetUseCaseForModelAccess``) and says how to submit it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from infra.config import inference_profile_parts
from runtime.models import MODELS

#: Foundation model id → AWS Marketplace product id, from the kit's model table (``runtime/models/catalog.py``, which
#: names the source of each id: AWS's product-id table above and the newest models' Bedrock model cards). Extend with
#: ``agentkit.marketplace_product_ids``.
MARKETPLACE_PRODUCT_IDS: dict[str, str] = {
    model.foundation_model: model.product_id for model in MODELS.values() if model.product_id
}


def product_ids(
    profile_ids: Sequence[str], extra: Mapping[str, str] | None = None
) -> tuple[list[str], list[str]]:
    """``(product ids, foundation models without a known product id)`` for the configured profiles."""
    table = {**MARKETPLACE_PRODUCT_IDS, **(extra or {})}
    found: list[str] = []
    missing: list[str] = []
    for profile_id in profile_ids:
        _, model_id = inference_profile_parts(profile_id)
        if model_id in table:
            found.append(table[model_id])
        else:
            missing.append(model_id)
    return list(dict.fromkeys(found)), list(dict.fromkeys(missing))


def model_access_statements(
    profile_ids: Sequence[str], *, stack: cdk.Stack, extra_product_ids: Mapping[str, str] | None = None
) -> tuple[list[iam.PolicyStatement], list[str]]:
    """The statements described in the module docstring, and the models left without ``Subscribe``."""
    products, missing = product_ids(profile_ids, extra_product_ids)
    profile_arn = f"arn:{stack.partition}:bedrock:{stack.region}:{stack.account}:inference-profile"
    statements = [
        iam.PolicyStatement(
            sid="ReadConfiguredInferenceProfiles",
            actions=["bedrock:GetInferenceProfile"],
            resources=[f"{profile_arn}/{p}" for p in dict.fromkeys(profile_ids)],
        ),
        iam.PolicyStatement(
            sid="ListInferenceProfiles", actions=["bedrock:ListInferenceProfiles"], resources=["*"]
        ),
        iam.PolicyStatement(
            sid="MarketplaceViewSubscriptions", actions=["aws-marketplace:ViewSubscriptions"], resources=["*"]
        ),
    ]
    if products:
        statements.append(
            iam.PolicyStatement(
                sid="MarketplaceSubscribeConfiguredModels",
                actions=["aws-marketplace:Subscribe", "aws-marketplace:Unsubscribe"],
                resources=["*"],
                conditions={"ForAnyValue:StringEquals": {"aws-marketplace:ProductId": products}},
            )
        )
    return statements, missing
