"""Configuration: the :class:`~runtime.config.settings.Settings` model (the only source of every setting), the field
machinery it is declared with, and the reference rendered from it. The variable names are in :mod:`runtime.env`."""
