"""The fixture schema renders to the checked-in files, byte for byte, every time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.generator.conftest import GOLDEN, render_fixture

# Set NEMO_LENS_UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change.
UPDATE = os.environ.get("NEMO_LENS_UPDATE_GOLDEN") == "1"


def _rendered(tmp_path: Path, fixture: str = "small.toml") -> dict[str, str]:
    files = render_fixture(fixture, tmp_path / "src", tmp_path / "docs.md")
    return {path.relative_to(tmp_path).as_posix(): text for path, text in files.items()}


def test_fixture_matches_golden_files(tmp_path: Path) -> None:
    rendered = _rendered(tmp_path)
    assert sorted(rendered) == [
        "attributes.md",
        "docs.md",
        "metrics.md",
        "src/nemo/lens/_signatures.py",
        "src/nemo/lens/consumers/serve.py",
        "src/nemo/lens/groups.py",
        "src/nemo/lens/semconv/attributes.py",
        "src/nemo/lens/semconv/metrics.py",
        "src/nemo/lens/semconv/resource.py",
    ]
    for name, text in rendered.items():
        golden = GOLDEN / (name.replace("/", "__") + ".golden")
        if UPDATE:
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(text, encoding="utf-8")
        assert golden.exists(), f"{golden.name} missing: run with NEMO_LENS_UPDATE_GOLDEN=1"
        assert text == golden.read_text(encoding="utf-8"), f"{name} differs from {golden.name}"


def test_generating_twice_is_byte_identical(tmp_path: Path) -> None:
    assert _rendered(tmp_path / "a") == _rendered(tmp_path / "b")


def test_reordering_toml_keys_changes_nothing(tmp_path: Path) -> None:
    assert _rendered(tmp_path / "a") == _rendered(tmp_path / "b", "small_reordered.toml")


@pytest.mark.parametrize(
    "needle",
    [
        # the header names the command and carries the schema hash
        "# DO NOT EDIT: generated from fixtures/small.toml by nemo-lens generate.",
        "# Edit the schema, then run "
        "`nemo-lens generate --schema fixtures/small.toml --out-root src`.",
        "# schema-sha256: ",
        # a renamed group is a deprecated alias of its new name, not a group of its own
        '    ITERATION: Final = _RenamedIteration(\n        "iteration",\n        STEP,\n',
        '            "iteration": STEP,\n',
        # a deprecated group keeps working and says so
        'deprecated="Synchronisation is now part of step."',
        # categories: stated goodput, profiling otherwise
        '            category="goodput",\n',
        "    GOODPUT_GROUPS: ClassVar[frozenset[str]] = frozenset(\n        {\n            JOB,\n",
        # presets as typed module-level constants (the very sets of PRESETS), the
        # implicit ones included; the goodput preset is the goodput groups
        "_TYPED_PRESETS: Final = cast(\n"
        '    "Mapping[SpanGroupPresetName, frozenset[SpanGroupName]]",\n'
        "    SpanGroup.PRESETS,\n)\n",
        'PER_STEP_PRESET: Final = _TYPED_PRESETS["per_step"]\n',
        "        every=ALL_GROUPS,\n        goodput=GOODPUT_GROUPS,\n",
        'PROFILING_PRESET: Final = _TYPED_PRESETS["profiling"]\n',
        "    _PRESETS: ClassVar[Mapping[str, frozenset[str]]] = PRESETS\n",
        # generated code imports only public modules
        "from nemo.lens.spec import (\n",
        # one system with the run-time registry: re-exported (the base does not register)
        '    "SpanRegistry",\n',
    ],
)
def test_golden_base_module_shows_each_feature(tmp_path: Path, needle: str) -> None:
    assert needle in _rendered(tmp_path)["src/nemo/lens/groups.py"]


@pytest.mark.parametrize(
    "needle",
    [
        # a consumer preset adds to the base preset of its name ...
        '            "default": frozenset(\n                {\n                    SpanGroup.JOB,\n'
        "                    SpanGroup.CHECKPOINT,\n                    REQUEST,\n",
        # ... unless it replaces it
        '            "per_step": frozenset(\n                {\n                    BATCH,\n'
        "                }\n",
        # a consumer's own view of an inherited group's category
        "        SpanGroup.GROUP_INFO[SpanGroup.CHECKPOINT]._replace(\n"
        '            category="profiling",\n',
        # schema text stays text: escaped, never code
        '    """One request, with \\\\backslashes\\\\ and \\"quotes\\" that stay inert text: '
        '\\"\\"\\" \\\\N \\\\x.\n',
        # one system with the run-time registry: registered on import
        "\n_register_class(ServeSpanGroup)\n",
    ],
)
def test_golden_consumer_module_shows_each_feature(tmp_path: Path, needle: str) -> None:
    assert needle in _rendered(tmp_path)["src/nemo/lens/consumers/serve.py"]


def test_the_docs_show_categories_and_what_comes_from_the_base(tmp_path: Path) -> None:
    docs = _rendered(tmp_path)["docs.md"]
    assert "| `checkpoint` (base) | periodic | profiling | Checkpoint save. |" in docs
    assert "from the base `default`: checkpoint, job; added here: request |" in docs
    assert "Replaces the base `per_step`." in docs


@pytest.mark.parametrize(
    ("module", "needle"),
    [
        # one documented Final per name; schema text stays inert in the docstring
        (
            "attributes",
            'SERVE_ROUTE: Final = "serve.route"\n"""The route a request took, with \\"quotes\\" '
            "and a \\\\ backslash. Type: `string`. Upstream\nnemo.lens 1.0.0 defines this constant "
            'with this value.\n"""\n',
        ),
        # a second constant for one value says which one it repeats
        (
            "attributes",
            'SERVE_PATH: Final = "serve.route"\n"""The route, under its older constant. ',
        ),
        ("attributes", "The same value as `SERVE_ROUTE`."),
        # a fixed value names its attribute; a LogRecord field is not dotted
        ("attributes", 'SERVE_OUTCOME_OK: Final = "ok"\n"""The request was answered. A value of '),
        ("attributes", 'SERVE_LOG_FIELD: Final = "serveRequestID"\n'),
        # the resource sections go to the resource module, and only there
        ("resource", 'SERVE_HOST: Final = "serve.host"\n'),
        ("resource", "Upstream nemo.lens 1.0.0 sends this key too."),
        ("resource", '__all__ = [\n    "SERVE_HOST",\n    "SERVE_WORKERS",\n]\n'),
    ],
)
def test_golden_name_modules_show_each_feature(tmp_path: Path, module: str, needle: str) -> None:
    assert needle in _rendered(tmp_path)[f"src/nemo/lens/semconv/{module}.py"]


def test_the_attributes_page_shows_types_upstream_and_modules(tmp_path: Path) -> None:
    page = _rendered(tmp_path)["attributes.md"]
    assert "| `SERVE_WORKERS` | `serve.workers` | int |  | How many workers serve. |" in page
    assert "| `SERVE_HOST` | `serve.host` | string | resource (1.0.0) | The serving host. |" in page
    assert "| `SERVE_ROUTE` | `serve.route` | string | constant (1.0.0) |" in page
    assert "Module: `nemo.lens.semconv.resource`." in page
    assert "Module: `nemo.lens.semconv.attributes`." in page
    assert "SERVE_ROUTE" not in _rendered(tmp_path)["src/nemo/lens/semconv/resource.py"]
