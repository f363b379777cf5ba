"""Consumer span-group classes, one generated module each (see schema/span_groups.toml).

- :mod:`nemo.lens.consumers.megatron`: :class:`MegatronSpanGroup`
- :mod:`nemo.lens.consumers.rl`: :class:`RLSpanGroup`
- :mod:`nemo.lens.consumers.gym`: :class:`GymSpanGroup`
"""
