"""Whether the deploy Region offers every CloudFormation resource type the stack uses, checked offline at synth.

cfn-lint ships, per Region, the list of resource types CloudFormation offers there
(``cfnlint/data/schemas/providers/<region>.json``: resource type → schema hash; cfn-lint reports a type missing from
a Region's list as E3006). AgentCore Runtime reaches more Regions than AgentCore Memory or
``AWS::BedrockAgentCore::ResourcePolicy`` (cfn-lint 1.58.0: us-west-1, eu-south-2, ap-south-2, ap-southeast-5 lack
Memory and ResourcePolicy; eu-south-1 lacks ResourcePolicy; ap-southeast-7 lacks Memory, ResourcePolicy and
GatewayTarget), so a stack that synthesizes for any Region can fail only at deploy, half created. The stack runs
:class:`RegionCheck` as a construct validation: ``cdk synth`` fails with what is missing and the nearest Regions
that offer all of it. ``agentkit doctor`` asks CloudFormation itself (``DescribeType``) for the deployed account.

"Nearest" is by great-circle distance between the Regions' cities (:data:`REGION_LOCATIONS`, the city each Region
is named after on AWS's Regions page, to a degree): a hint for choosing, not a latency figure.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from pathlib import Path

import aws_cdk as cdk
import jsii
from constructs import Construct, IConstruct, IValidation

#: Region → (latitude, longitude) of its city, rounded to a degree.
REGION_LOCATIONS: dict[str, tuple[float, float]] = {
    "us-east-1": (39, -77),
    "us-east-2": (40, -83),
    "us-west-1": (37, -122),
    "us-west-2": (46, -120),
    "ca-central-1": (46, -74),
    "ca-west-1": (51, -114),
    "mx-central-1": (21, -100),
    "sa-east-1": (-24, -47),
    "eu-west-1": (53, -6),
    "eu-west-2": (52, 0),
    "eu-west-3": (49, 2),
    "eu-central-1": (50, 9),
    "eu-central-2": (47, 9),
    "eu-north-1": (59, 18),
    "eu-south-1": (45, 9),
    "eu-south-2": (42, -1),
    "il-central-1": (32, 35),
    "me-central-1": (24, 54),
    "me-south-1": (26, 51),
    "af-south-1": (-34, 18),
    "ap-south-1": (19, 73),
    "ap-south-2": (17, 78),
    "ap-east-1": (22, 114),
    "ap-east-2": (25, 121),
    "ap-northeast-1": (36, 140),
    "ap-northeast-2": (37, 127),
    "ap-northeast-3": (35, 135),
    "ap-southeast-1": (1, 104),
    "ap-southeast-2": (-34, 151),
    "ap-southeast-3": (-6, 107),
    "ap-southeast-4": (-38, 145),
    "ap-southeast-5": (3, 102),
    "ap-southeast-6": (-37, 175),
    "ap-southeast-7": (14, 101),
    "us-gov-east-1": (40, -83),
    "us-gov-west-1": (46, -120),
    "cn-north-1": (40, 116),
    "cn-northwest-1": (38, 106),
}


def providers_dir() -> Path:
    """cfn-lint's per-Region resource-type lists."""
    import cfnlint

    return Path(cfnlint.__file__).parent / "data" / "schemas" / "providers"


@functools.cache
def resource_types(region: str) -> frozenset[str] | None:
    """The resource types CloudFormation offers in ``region`` per cfn-lint, None when cfn-lint has no list for it."""
    path = providers_dir() / f"{region}.json"
    if not path.is_file():
        return None
    return frozenset(json.loads(path.read_text(encoding="utf-8")))


def _distance(a: str, b: str) -> float:
    (lat1, lon1), (lat2, lon2) = REGION_LOCATIONS[a], REGION_LOCATIONS[b]
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    cos = math.sin(p1) * math.sin(p2) + math.cos(p1) * math.cos(p2) * math.cos(dl)
    return math.acos(max(-1.0, min(1.0, cos)))


def same_partition(a: str, b: str) -> bool:
    def partition(region: str) -> str:
        return "cn" if region.startswith("cn-") else "gov" if region.startswith("us-gov-") else "aws"

    return partition(a) == partition(b)


def nearest_with(types: Iterable[str], region: str, *, count: int = 3) -> list[str]:
    """Up to ``count`` Regions of ``region``'s partition that offer every type, nearest first."""
    wanted = set(types)
    candidates = [
        r
        for r in REGION_LOCATIONS
        if r != region and same_partition(r, region) and wanted <= (resource_types(r) or frozenset())
    ]
    if region in REGION_LOCATIONS:
        candidates.sort(key=lambda r: _distance(region, r))
    return candidates[:count]


def region_problem(types: Iterable[str], region: str) -> str | None:
    """What keeps a stack of ``types`` from deploying in ``region`` (None when nothing, or when the Region is not
    a concrete name / cfn-lint has no list for it)."""
    wanted = sorted(set(types))
    offered = resource_types(region)
    if offered is None:
        return None
    missing = [t for t in wanted if t not in offered]
    if not missing:
        return None
    nearest = nearest_with(wanted, region)
    return (
        f"{region} does not offer {', '.join(missing)} (CloudFormation's resource types per Region, as cfn-lint "
        f"lists them): the deploy would fail there. Deploy to "
        + (" or ".join(nearest) if nearest else "another Region")
        + ", which offer every resource type of this stack (set agentkit.region)"
    )


def stack_resource_types(scope: IConstruct) -> set[str]:
    """The CloudFormation resource types of every ``CfnResource`` under ``scope`` (``AWS::`` types only: a custom
    resource, ``Custom::...``, is backed by the stack's own function and exists everywhere)."""
    return {
        node.cfn_resource_type
        for node in scope.node.find_all()
        if isinstance(node, cdk.CfnResource) and node.cfn_resource_type.startswith("AWS::")
    }


@jsii.implements(IValidation)
class RegionCheck:
    """A construct validation: fails ``cdk synth`` when the deploy Region lacks a resource type the stack uses."""

    def __init__(self, scope: Construct, region: str) -> None:
        self._scope = scope
        self._region = region

    def validate(self) -> list[str]:
        if cdk.Token.is_unresolved(self._region):
            return []
        problem = region_problem(stack_resource_types(self._scope), self._region)
        return [problem] if problem else []
