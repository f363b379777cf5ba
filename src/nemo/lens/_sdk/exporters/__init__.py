"""The exporters nemo.lens builds (JSON lines to a file or standard output, OTLP) and the
one guard every exporter goes through."""
