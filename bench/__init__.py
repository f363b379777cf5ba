"""What nemo.lens's instrumentation costs, each figure measured against its baseline in one run.

``python -m bench`` (``make bench``) prints tables and writes
``bench/results/latest.json``; ``python -m bench.check`` (``make bench-check``)
compares a results file with the targets of :mod:`bench.targets` and exits
non-zero on a miss. Nothing here is a test: timings never fail CI.

Sections, each in its own module:

:mod:`bench.micro`
    Per-call costs in this process, each timed against its baseline in
    interleaved pairs (:mod:`bench.harness` says how and why).
:mod:`bench.imports`
    Import time in fresh interpreters, against ``import opentelemetry.trace``.
:mod:`bench.memory`
    ``tracemalloc`` over a million disabled calls (own interpreter).
:mod:`bench.throughput`
    A million spans through the ``file`` exporter, and a sustained
    20,000 spans/s for 10 s (own interpreters).
:mod:`bench.cli`
    ``nemo-lens summarize``, ``goodput`` and ``report`` of a million-span
    trace: spans per second and peak RSS of each (own interpreters).

A full run takes about 4 minutes on a lightly loaded 2-core machine (the command
line's million spans are about 2.5 of them); ``--quick`` cuts repeats and sizes to
about a minute.
"""
