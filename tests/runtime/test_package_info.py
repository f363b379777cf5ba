"""``nemo.lens.package_info`` (upstream v0.2.0's module) says what the installed package says."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap

import nemo.lens
from nemo.lens import package_info

_REEXPORTED = (
    "__package_name__",
    "__contact_names__",
    "__contact_emails__",
    "__homepage__",
    "__repository_url__",
    "__download_url__",
)


def _metadata() -> importlib.metadata.PackageMetadata:
    return importlib.metadata.metadata(package_info.__package_name__)


def test_package_info_matches_the_installed_distribution() -> None:
    metadata = _metadata()
    assert package_info.__package_name__ == metadata["Name"]
    assert package_info.__version__ == metadata["Version"]
    assert package_info.__description__ == metadata["Summary"]
    assert package_info.__license__ == (metadata["License-Expression"] or metadata["License"])
    keywords = [word.strip() for word in package_info.__keywords__.split(",")]
    assert keywords == metadata["Keywords"].split(",")


def test_contacts_and_urls_are_what_the_distribution_declares() -> None:
    # pyproject.toml declares no authors and no URLs: package_info invents none.
    metadata = _metadata()
    assert package_info.__contact_names__ == (metadata["Author"] or "")
    assert package_info.__contact_emails__ == (metadata["Author-email"] or "")
    urls = dict(
        entry.split(", ", 1) for entry in metadata.get_all("Project-URL") or []
    )  # "Label, https://..."
    assert package_info.__homepage__ == urls.get("Homepage", metadata["Home-page"] or "")
    assert package_info.__repository_url__ == urls.get("Repository", "")
    assert package_info.__download_url__ == urls.get("Download", metadata["Download-URL"] or "")
    described = " ".join(
        str(getattr(package_info, name)) for name in (*_REEXPORTED, "__description__")
    ).lower()
    assert "nvidia" not in described  # this project's values, not upstream's


def test_the_version_is_nemo_lens_version_in_parts() -> None:
    assert package_info.__version__ is nemo.lens.__version__
    assert package_info.VERSION == (
        package_info.MAJOR,
        package_info.MINOR,
        package_info.PATCH,
        package_info.PRE_RELEASE,
    )
    major, minor, patch, pre = package_info.VERSION
    assert all(type(part) is int for part in (major, minor, patch))
    assert f"{major}.{minor}.{patch}{pre}" == nemo.lens.__version__


def test_the_top_level_re_exports_the_metadata_lazily() -> None:
    for name in _REEXPORTED:
        assert getattr(nemo.lens, name) is getattr(package_info, name), name
        assert name in nemo.lens.__all__
    code = textwrap.dedent(
        """
        import json, sys
        import nemo.lens
        before = "nemo.lens.package_info" in sys.modules
        homepage = nemo.lens.__homepage__
        print(json.dumps([before, "nemo.lens.package_info" in sys.modules, homepage]))
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    before, after, homepage = json.loads(completed.stdout.strip().splitlines()[-1])
    assert (before, after, homepage) == (False, True, package_info.__homepage__)
