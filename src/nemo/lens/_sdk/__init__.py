"""The SDK side of nemo.lens: everything that imports ``opentelemetry-sdk``.

Imported only when set-up enables telemetry, so ``import nemo.lens``, the primitives and a
disabled set-up never load the SDK.
"""
