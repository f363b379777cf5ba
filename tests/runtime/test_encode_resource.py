"""encode_resource_attributes: what a child process reads from OTEL_RESOURCE_ATTRIBUTES is
exactly what the parent meant, read back by the OpenTelemetry SDK itself."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping

import pytest
from opentelemetry.sdk.resources import OTELResourceDetector

from nemo.lens.resources import (
    OTEL_RESOURCE_ATTRIBUTES,
    decode_resource_attributes,
    encode_resource_attributes,
)

pytestmark = pytest.mark.usefixtures("clean_env")


def _sdk_reads(value: str, monkeypatch: pytest.MonkeyPatch) -> Mapping[str, object]:
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, value)
    return dict(OTELResourceDetector().detect().attributes)


class _Backend(str, enum.Enum):
    NCCL = "nccl"


class _Level(int, enum.Enum):
    HIGH = 3


def test_the_sdk_reads_back_every_value_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    value = encode_resource_attributes(
        {
            "nemo.run.id": "exp/2026-01,seed=7",  # a comma and an equals sign inside
            "nv.dl.rank": 3,
            "flag": True,
            "rate": 0.5,
            "text": "50% done; ü",
            "backend": _Backend.NCCL,  # str() of this member is "_Backend.NCCL"
            "level": _Level.HIGH,
        },
        inherited="",
    )
    assert _sdk_reads(value, monkeypatch) == {
        "nemo.run.id": "exp/2026-01,seed=7",
        "nv.dl.rank": "3",
        "flag": "True",
        "rate": "0.5",
        "text": "50% done; ü",
        "backend": "nccl",
        "level": "3",
    }
    assert decode_resource_attributes(value) == _sdk_reads(value, monkeypatch)


def test_inherited_entries_are_kept_as_written_and_replaced_keys_not_repeated() -> None:
    inherited = "team=a%2Cb, nv.dl.rank=0,,bare ,=nokey,job=7"
    value = encode_resource_attributes({"nv.dl.rank": 5}, inherited=inherited)
    assert value == "team=a%2Cb,job=7,nv.dl.rank=5"
    # Fed back in, as a parent spawning in a loop does: still one entry per key.
    again = encode_resource_attributes({"nv.dl.rank": 6}, inherited=value)
    assert again == "team=a%2Cb,job=7,nv.dl.rank=6"


def test_the_default_is_this_processs_variable_as_it_is_now(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, "job=7")
    assert encode_resource_attributes({"nv.dl.rank": 1}) == "job=7,nv.dl.rank=1"
    monkeypatch.setenv(OTEL_RESOURCE_ATTRIBUTES, "job=8")
    assert encode_resource_attributes({}) == "job=8"
    assert encode_resource_attributes({"a": 1}, inherited="") == "a=1"


def test_none_is_left_out_and_a_later_duplicate_replaces() -> None:
    assert encode_resource_attributes({"a": None, "b": 1, " b ": 2}, inherited="") == "b=2"


@pytest.mark.parametrize(
    ("attributes", "said"),
    [
        ({1: "x"}, "key 1 is not a str"),
        ({"a,b": "x"}, "key 'a,b' cannot be written"),
        ({"a=b": "x"}, "key 'a=b' cannot be written"),
        ({"  ": "x"}, "key '  ' cannot be written"),
        ({"ids": [1, 2]}, "'ids' has a value of type list"),
        ({"raw": b"x"}, "'raw' has a value of type bytes"),
        ({"name": "bad\udcff"}, "'name' has a value that is not valid Unicode"),
    ],
)
def test_what_the_variable_cannot_carry_is_dropped_with_a_warning(
    attributes: Mapping[object, object], said: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="nemo.lens.resources"):
        value = encode_resource_attributes(
            {**attributes, "kept": "yes"},  # type: ignore[dict-item]
            inherited="job=7",
        )
    assert value == "job=7,kept=yes"
    assert [record.levelno for record in caplog.records] == [logging.WARNING]
    assert said in caplog.records[0].getMessage()


def test_a_wrong_argument_is_refused_with_what_it_takes() -> None:
    with pytest.raises(TypeError, match="takes a mapping of attribute names to values, got list"):
        encode_resource_attributes([("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"inherited=\.\.\.\) takes the variable's text"):
        encode_resource_attributes({"a": 1}, inherited=b"x")  # type: ignore[arg-type]


def test_it_is_exported_where_upstream_and_its_consumers_import_it() -> None:
    import nemo.lens
    import nemo.lens.resources

    assert nemo.lens.encode_resource_attributes is encode_resource_attributes
    assert nemo.lens.resources.encode_resource_attributes is encode_resource_attributes
    assert OTEL_RESOURCE_ATTRIBUTES == "OTEL_RESOURCE_ATTRIBUTES"
