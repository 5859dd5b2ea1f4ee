"""The base of every configuration model of the CDK app (:mod:`infra.config`, :mod:`infra.webhook.config`).

Kept apart so the modules holding parts of the configuration share it without importing each other.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigModel(BaseModel):
    """Unknown keys are errors (a typo never passes silently) and a validated value never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)
