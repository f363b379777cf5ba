"""The exporters nemo.lens builds: JSON lines to a file or standard output, OTLP, and
the wrappers every exporter goes through (health reporting, redaction and cleaning).

Which one ``NemoLensConfig.exporter`` selects, and the files they write, is
:mod:`nemo.lens._core.destinations`; :mod:`~nemo.lens._sdk.exporters.factory`
builds them.
"""
