"""Model knowledge: one table of the Claude models the kit can run and price (:mod:`runtime.models.catalog`)."""

from runtime.models.catalog import (
    DEFAULT_FALLBACK_MODEL,
    DEFAULT_MODEL,
    DEFAULT_SMALL_MODEL,
    MODELS,
    REGIONAL_PREMIUM,
    ClaudeModel,
    ModelPrice,
    Source,
    model_for,
)

__all__ = [
    "DEFAULT_FALLBACK_MODEL",
    "DEFAULT_MODEL",
    "DEFAULT_SMALL_MODEL",
    "MODELS",
    "REGIONAL_PREMIUM",
    "ClaudeModel",
    "ModelPrice",
    "Source",
    "model_for",
]
