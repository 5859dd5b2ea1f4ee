"""The fixed physical names of what a stage keeps after ``cdk destroy`` with ``removal_policy: retain``.

The memory, the gateway and the webhook's secrets need names (the runtime reads the memory and the gateway by
them, the trackers' settings point at the secrets), and with ``retain`` they outlive the stack: a deploy after a
destroy would create them again under the same names and fail on the collision. The stage's ``generation``
(``stages.<stage>.generation``, default 1) is part of each of these names, so bumping it gives the next deploy a
fresh set, while generation 1 keeps the names stages were first deployed with (renaming the memory replaces
it, and its events with it; the gateway is renamed in place). ``agentkit doctor`` (``name-collisions``) finds
retained resources of the current generation and names the first free one; docs/deploy.md, "Destroy and redeploy
a retained stage".

Why no adoption by import: CloudFormation's automatic import (``cdk deploy --import-existing-resources``)
needs a primary identifier that is a writable property in the template, and the CloudFormation schemas
(cfn-lint 1.58, ``primaryIdentifier``/``readOnlyProperties``) make it a read-only one for each of these types:
``AWS::BedrockAgentCore::Memory`` ``MemoryArn``, ``AWS::BedrockAgentCore::Gateway`` ``GatewayIdentifier``,
``AWS::SecretsManager::Secret`` ``Id``. ``cdk import`` takes those identifiers by hand, but "the only changes
allowed in an import operation are the addition of new resources being imported" (CDK developer guide, ``cdk
import``), so what they reference (the gateway's role, the memory's key) must already be in the stack, which after
a destroy it is not.

The runtime keeps ``<project>_<stage>`` in every generation: it is never retained (it goes with the stack), so
its name is free again after a destroy, and its ARN, log groups and invoke commands stay what they were.

Name rules (CloudFormation schemas in cfn-lint 1.58): Memory ``Name`` ``^[a-zA-Z][a-zA-Z0-9_]{0,47}$``; Gateway
``Name`` ``^([0-9a-zA-Z][-]?){1,48}$``; Secret ``Name`` at most 512 characters of ``/_+=.@-`` and alphanumerics.
With ``project_name`` (at most 21 characters), a stage name and a generation up to 999 every name stays inside
them (``tests/infra/test_generations.py`` checks it against the schemas).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_GENERATION = 999


def generation_suffix(generation: int) -> str:
    """``""`` for generation 1 (the names as first deployed), else ``g<n>``.

    Raises:
        ValueError: ``generation`` is not between 1 and :data:`MAX_GENERATION`.
    """
    if not 1 <= generation <= MAX_GENERATION:
        raise ValueError(f"generation {generation} is not between 1 and {MAX_GENERATION}")
    return "" if generation == 1 else f"g{generation}"


@dataclass(frozen=True)
class StageNames:
    """The retained resources' names for one project, stage and generation."""

    project_name: str
    stage: str
    generation: int = 1

    def _join(self, base: str, separator: str) -> str:
        suffix = generation_suffix(self.generation)
        return f"{base}{separator}{suffix}" if suffix else base

    @property
    def memory(self) -> str:
        """``<project>_<stage>_memory[_g<n>]``."""
        return self._join(f"{self.project_name}_{self.stage}_memory", "_")

    @property
    def gateway(self) -> str:
        """``<project>-<stage>-tools[-g<n>]``."""
        return self._join(f"{self.project_name}-{self.stage}-tools", "-")

    @property
    def secret_prefix(self) -> str:
        """``<project>-<stage>[-g<n>]``: the webhook's secrets are ``<prefix>/<tracker>-webhook-secret`` and
        ``<prefix>/<tracker>-token``."""
        return self._join(f"{self.project_name}-{self.stage}", "-")
