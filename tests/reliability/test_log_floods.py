"""A failing destination is one warning and one count, never a traceback per span.

The ``console`` exporter writes each span as it ends, from the thread that
ends it. When its reader goes away (``job | head``, a log collector that
exits), every write fails: 2,000 spans printed 1,999 tracebacks. What a user
must see now: the job runs on, one warning names standard output and the
cause, and the summary at shutdown counts what was lost.
"""

from __future__ import annotations

import os
import subprocess

from tests.reliability.conftest import job_command, job_env

SPANS = 2000

_CONSOLE_JOB = """
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

handle = setup_telemetry(NemoLensConfig.from_env())
for i in range(int(sys.argv[1])):
    with managed_span("step", "train.step", i=i):
        pass
finished = handle.shutdown()
with open(sys.argv[2], "w") as out:
    out.write(json.dumps({"finished": finished}))
"""


def test_a_console_whose_reader_is_gone_is_one_warning_and_a_count(tmp_path: object) -> None:
    result = os.path.join(str(tmp_path), "result.json")
    reader, writer = os.pipe()
    os.close(reader)  # nobody will ever read what the job prints
    try:
        completed = subprocess.run(
            job_command(_CONSOLE_JOB, str(SPANS), result),
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env=job_env(
                {
                    "NEMO_LENS_ENABLED": "1",
                    "NEMO_LENS_EXPORTER": "console",
                    "NEMO_LENS_SPAN_GROUPS": "all",
                    "NEMO_LENS_METRICS_ENABLED": "0",
                }
            ),
            check=False,
        )
    finally:
        os.close(writer)
    assert completed.returncode == 0, completed.stderr
    with open(result, encoding="utf-8") as data:
        assert data.read() == '{"finished": false}'
    lines = completed.stderr.splitlines()
    assert "Traceback" not in completed.stderr
    warning, summary = lines
    assert warning.startswith("nemo.lens: cannot export traces to standard output (")
    assert "Broken pipe" in warning and "Was standard output closed" in warning
    assert summary == (
        f"nemo.lens: telemetry this process could not deliver: {SPANS} span(s) failed to "
        "export to standard output"
    )
