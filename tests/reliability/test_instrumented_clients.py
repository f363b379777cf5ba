"""A job that instruments its HTTP client does not trace its own telemetry's requests.

nemo.lens exports with instrumentation suppressed, as the SDK's processors do, so
``opentelemetry-instrumentation-requests`` (the client OTLP/HTTP sends with) traces the
job's own requests and never the exporter's: without that, every export would be a span,
exported in turn, span after span.
"""

from __future__ import annotations

from collections import Counter

from tests.reliability.conftest import OtlpReceiver, run_job

_JOB = """
import requests
from opentelemetry.instrumentation.requests import RequestsInstrumentor
from nemo.lens import NemoLensConfig, managed_span, setup_telemetry

handle = setup_telemetry(NemoLensConfig.from_env())
RequestsInstrumentor().instrument()
for i in range(3):
    with managed_span("step", "train.step", i=i):
        # The job's own request, which the instrumentation must trace.
        requests.post(sys.argv[1] + "/job/request", data=b"x", timeout=10)
    handle.force_flush()  # an export of its own, between the steps
report(finished=handle.shutdown())
"""


def test_the_exporters_own_requests_are_not_traced(otlp_receiver: OtlpReceiver) -> None:
    env = {
        "NEMO_LENS_ENABLED": "1",
        "NEMO_LENS_EXPORTER": "otlp",
        "NEMO_LENS_SPAN_GROUPS": "all",
        "NEMO_LENS_LOGS_ENABLED": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    }
    job = run_job(_JOB, otlp_receiver.endpoint, env=env)
    assert job.returncode == 0, job.stderr
    assert job.result["finished"] is True
    exports = [r.path for r in otlp_receiver.requests if r.path.startswith("/v1/")]
    assert exports.count("/v1/traces") >= 3  # the exporter did send, several times
    names = Counter(span.name for span in otlp_receiver.spans())
    # Three steps, and a client span for each of the job's own requests (the
    # instrumentation works); none for the exporter's requests to /v1/*.
    assert names["train.step"] == 3
    client = [n for n in names if n not in ("train.step",)]
    assert sum(names[n] for n in client) == 3, names
    for span in otlp_receiver.spans():
        if span.name != "train.step":
            urls = [a.value.string_value for a in span.attributes if "url" in a.key]
            assert urls and all("/job/request" in url for url in urls), urls
