"""``agentkit`` sub-commands. Each module has ``register(subparsers, common)`` adding its parser, whose
``handler`` default is called as ``handler(args, ctx) -> int`` (see :mod:`agentkit.cli`)."""
