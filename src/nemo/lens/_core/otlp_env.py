"""Moved to :mod:`nemo.lens._core.destinations`; kept while ``_setup.py`` imports it here."""

from nemo.lens._core.destinations import check_otlp_environment, register_otlp_secrets

__all__ = ["check_otlp_environment", "register_otlp_secrets"]
