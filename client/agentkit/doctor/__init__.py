"""``agentkit doctor``: check an AWS account before the first ``cdk deploy`` (and after it), one line per check.

Reads the stage's settings from ``cdk.json`` (plain JSON: ``agentkit.model``/``extra_models``, ``region``,
``account``, ``project_name``, ``gateway``, ``webhook``, ``observability``, ``github_oidc``, ``image_build`` and
the stage's ``overrides``) and asks AWS, with the caller's own credentials, in the Region chosen by ``--region``
> cdk.json's ``agentkit.region`` > ``AWS_REGION`` > ``AWS_DEFAULT_REGION`` > the profile's:

=====================  ==================================================================  ============================
check                  call                                                                IAM action
=====================  ==================================================================  ============================
credentials            ``sts:GetCallerIdentity``                                           (none needed)
region                 ``bedrock-agentcore-control:ListAgentRuntimes``                     ListAgentRuntimes
cdk-bootstrap          ``ssm:GetParameter /cdk-bootstrap/hnb659fds/version``               ssm:GetParameter
inference-profile      ``bedrock:GetInferenceProfile`` per profile; its Regions vs. policy  GetInferenceProfile
model-access           ``bedrock:GetFoundationModelAvailability`` per model                GetFoundationModelAvailability
model-lifecycle        ``bedrock:GetFoundationModel`` (``modelLifecycle``) per model       GetFoundationModel
anthropic-use-case     ``bedrock:GetUseCaseForModelAccess``; organization membership       GetUseCaseForModelAccess,
                                                                                           DescribeOrganization
powertools-layers      ``ssm:GetParameters`` on the public Powertools layer parameters     ssm:GetParameters
transaction-search     ``xray:GetTraceSegmentDestination``; does the stack own it          GetTraceSegmentDestination
quotas                 ``servicequotas:ListServiceQuotas`` (exact quota names)             ListServiceQuotas
logs-resource-policies ``logs:DescribeResourcePolicies`` (10 per Region, not raisable)      DescribeResourcePolicies
github-oidc-provider   ``iam:ListOpenIDConnectProviders`` vs. github_oidc.create_provider  ListOpenIDConnectProviders
name-collisions        AgentCore list calls, ``secretsmanager:ListSecrets``                ListAgentRuntimes,
                                                                                           ListMemories, ListGateways,
                                                                                           ListSecrets
runtime-mmdsv2         ``bedrock-agentcore-control:GetAgentRuntime`` (deployed runtime)    GetAgentRuntime
runtime-metrics        ``cloudwatch:ListMetrics`` in ``AWS/Bedrock-AgentCore``             ListMetrics
webhook-secrets        ``secretsmanager:GetSecretValue`` on the stack's webhook secrets    GetSecretValue
docker                 ``docker info`` / ``docker buildx inspect`` (``image_build=local``)   (none)
=====================  ==================================================================  ============================

The stack-aware checks read the stage's stack first (``cloudformation:ListStackResources`` on
``AgentKit-<stage>``). Each check is ``ok``, ``warn`` (the deploy works, something will not: says what),
``fail`` (blocks the deploy or the first call of the agent: says the fix) or ``skip`` (not run, and why: no
credentials or no Region). Exit status: 0, or 1 if any check failed (``--ignore NAME`` turns one check's failure
into a warning), 2 for a bad ``cdk.json``/arguments. ``--output json`` prints the same as one JSON document.

Nothing here imports the runtime or the CDK app (boto3 only); the values copied from ``infra/`` (Powertools
version and layer runtimes, the bootstrap version, resource names, the runtime role's model ARNs) are
cross-checked against a real synth by ``tests/infra/test_doctor_contract.py``. ``python -m agentkit.doctor``
runs the checks without the rest of the client.
"""

from __future__ import annotations

from agentkit.doctor.account import (
    QUOTA_NEEDS,
    check_bootstrap,
    check_credentials,
    check_layers,
    check_oidc_provider,
    check_quotas,
    check_region,
    check_use_case,
)
from agentkit.doctor.core import (
    BOOTSTRAP_PARAMETER,
    MIN_BOOTSTRAP_VERSION,
    CheckResult,
    DoctorConfig,
    DoctorConfigError,
    Status,
    failure_kind,
    foundation_model,
    layer_parameter,
    load_doctor_config,
    resolve_region,
)
from agentkit.doctor.deployed import (
    StackView,
    check_logs_resource_policies,
    check_mmds,
    check_name_collisions,
    check_runtime_metrics,
    check_transaction_search,
    read_stack,
)
from agentkit.doctor.host import check_docker
from agentkit.doctor.models import check_lifecycle, check_model_access, check_profile, policy_model_arns
from agentkit.doctor.run import aws_check_names, run_checks

__all__ = [
    "BOOTSTRAP_PARAMETER",
    "MIN_BOOTSTRAP_VERSION",
    "QUOTA_NEEDS",
    "CheckResult",
    "DoctorConfig",
    "DoctorConfigError",
    "StackView",
    "Status",
    "aws_check_names",
    "check_bootstrap",
    "check_credentials",
    "check_docker",
    "check_layers",
    "check_lifecycle",
    "check_logs_resource_policies",
    "check_mmds",
    "check_model_access",
    "check_name_collisions",
    "check_oidc_provider",
    "check_profile",
    "check_quotas",
    "check_region",
    "check_runtime_metrics",
    "check_transaction_search",
    "check_use_case",
    "failure_kind",
    "foundation_model",
    "layer_parameter",
    "load_doctor_config",
    "policy_model_arns",
    "read_stack",
    "resolve_region",
    "run_checks",
]
