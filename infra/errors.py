"""The CDK app's one error type. It lives below every other ``infra`` module, so the config models
(:mod:`infra.config`) and the ``-c`` override parser (:mod:`infra.overrides`) can both raise it without
importing each other."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration value is invalid; ``key`` is its dotted path, ``allowed`` describes valid values."""

    def __init__(self, key: str, message: str, *, allowed: str) -> None:
        self.key = key
        self.detail = message
        self.allowed = allowed
        super().__init__(f"{key}: {message}; allowed: {allowed}")
