"""The pre-commit hook, installed in a consumer's repository with the real pre-commit.

The configurations are the ones docs/consumer-repositories.md shows, with the hook
repository's URL and rev filled in: a throwaway git repository made from this checkout's
files (as a commit of the working tree would hold them), which pre-commit clones like any
other. The shipped hook (``language: python``) makes pre-commit build an environment
with nemo-lens and the generator's dependencies from PyPI (about 15 seconds); the local
``language: system`` variant runs the nemo-lens of this suite's environment.

pre-commit comes with the dev extra; without it (or git) these tests are skipped, saying
how to install it, and with ``NEMO_LENS_REQUIRE_PRE_COMMIT=1`` (CI) they fail instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import nemo.lens
from tests.generator.conftest import REPO, copy_checkout, free_group_name
from tests.generator.test_command import CONSUMER_SCHEMA

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

REQUIRE_VARIABLE = "NEMO_LENS_REQUIRE_PRE_COMMIT"
DOCS = REPO / "docs" / "consumer-repositories.md"
_CONFIG = re.compile(r"^```yaml\n(# \.pre-commit-config\.yaml\n.*?)^```$", re.DOTALL | re.MULTILINE)
GENERATE = [sys.executable, "-m", "nemo.lens.codegen", "--schema", "lens.toml", "--out-root", "src"]
STALE = (
    "error: 1 generated file(s) differ from lens.toml; run "
    "`nemo-lens generate --schema lens.toml --out-root src`"
)


@dataclass(frozen=True)
class Shell:
    """Commands run as a person runs them in a shell, with pre-commit and git set up afresh."""

    env: dict[str, str]
    suite_bin: str
    """This suite's environment's bin directory, first on PATH unless a command says not."""
    suite_package: str
    """The directory this suite imports nemo.lens from: the suite's commands import it
    too (a copy of the checkout, run with PYTHONPATH, would otherwise generate with the
    package its virtualenv installed, and the shipped hook, installed from the copy,
    would find those files stale)."""

    @property
    def pre_commit_home(self) -> Path:
        return Path(self.env["PRE_COMMIT_HOME"])

    def __call__(
        self, *command: str, cwd: Path, suite: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """*command* in *cwd*; with *suite* false, neither this suite's environment is on
        PATH nor its package on PYTHONPATH (a git hook still finds the pre-commit that
        installed it)."""
        env = {**self.env, "PYTHONPATH": self.suite_package}
        if not suite:
            env["PATH"] = env["PATH"].replace(self.suite_bin + os.pathsep, "", 1)
            del env["PYTHONPATH"]
        return subprocess.run(
            command,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Shell:
    missing = [] if shutil.which("git") else ["git"]
    if importlib.util.find_spec("pre_commit") is None:
        missing.append("pre-commit (pip install -e '.[dev]', or make venv)")
    if missing:
        message = f"the pre-commit tests need {' and '.join(missing)}"
        if os.environ.get(REQUIRE_VARIABLE, "").strip() == "1":
            pytest.fail(f"{message} ({REQUIRE_VARIABLE}=1)")
        pytest.skip(message)
    home = tmp_path_factory.mktemp("home")
    suite_bin = str(Path(sys.executable).parent)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "PRE_COMMIT", "PYTHONPATH", "NEMO_LENS_"))
    }
    env.update(
        {
            # This suite's environment first: its pre-commit, and the nemo-lens of the
            # local hook, as in a shell where the project's virtualenv is active.
            "PATH": os.pathsep.join([suite_bin, env.get("PATH", "")]),
            "HOME": str(home),
            "PRE_COMMIT_HOME": str(home / "pre-commit"),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "A. Author",
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_COMMITTER_NAME": "A. Author",
            "GIT_COMMITTER_EMAIL": "author@example.com",
        }
    )
    return Shell(env, suite_bin, str(Path(nemo.lens.__file__).resolve().parents[2]))


@pytest.fixture(scope="module")
def hook_repository(run: Shell, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(URL, rev) of a git repository holding this checkout's files in one commit."""
    source = copy_checkout(tmp_path_factory.mktemp("hook-repository") / "nemo-lens")
    for command in (("git", "init", "-q"), ("git", "add", "-A"), ("git", "commit", "-qm", "x")):
        done = run(*command, cwd=source)
        assert done.returncode == 0, done.stderr
    rev = run("git", "rev-parse", "HEAD", cwd=source).stdout.strip()
    return source.as_uri(), rev


def _configs() -> dict[str, str]:
    """The docs' .pre-commit-config.yaml snippets: the shipped hook's and the local one."""
    found = {}
    for text in _CONFIG.findall(DOCS.read_text("utf-8")):
        found["local" if "repo: local" in text else "shipped"] = text
    assert set(found) == {"local", "shipped"}, "the docs show both configurations"
    return found


def _consumer(tmp_path: Path, run: Shell, config: str) -> Path:
    """A consumer's repository, its files generated and committed, the hook installed."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mylib"\n', encoding="utf-8")
    (tmp_path / "lens.toml").write_text(
        CONSUMER_SCHEMA.format(module="mylib.lens_groups", group=free_group_name("shard_merge")),
        encoding="utf-8",
    )
    (tmp_path / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    for command in (("git", "init", "-q"), (*GENERATE,), ("git", "add", "-A")):
        done = run(*command, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    installed = run(sys.executable, "-m", "pre_commit", "install", cwd=tmp_path)
    assert installed.stdout == "pre-commit installed at .git/hooks/pre-commit\n", installed.stderr
    return tmp_path


def _commit(run: Shell, repository: Path, suite: bool) -> tuple[int, str]:
    """`git add -A && git commit`: the exit status, and what the terminal shows (git hands
    the hook's output to standard error)."""
    run("git", "add", "-A", cwd=repository)
    done = run("git", "commit", "-m", "mylib: span groups", cwd=repository, suite=suite)
    return done.returncode, done.stdout + done.stderr


def _commits(run: Shell, repository: Path) -> int:
    return int(run("git", "rev-list", "--count", "HEAD", cwd=repository).stdout or 0)


def _stale_then_current(run: Shell, repository: Path, suite: bool) -> None:
    """The story both hooks tell: current files commit, a schema edit alone does not, and
    after `nemo-lens generate` it does. *suite*: this suite's nemo-lens is on PATH."""
    status, shown = _commit(run, repository, suite)
    assert status == 0, shown
    assert re.search(r"^nemo-lens generate --check\.+Passed$", shown, re.MULTILINE), shown

    schema = repository / "lens.toml"
    split = free_group_name("shard_split")  # not a name the shipped schema holds
    schema.write_text(
        schema.read_text("utf-8")
        + f'\n[consumers.mylib.groups.{split}]\ndescription = "Splitting of dataset shards."\n'
        'fires = "periodic"\nsince = "1.1.0"\n',
        encoding="utf-8",
    )
    status, shown = _commit(run, repository, suite)

    assert status == 1, shown
    assert re.search(r"^nemo-lens generate --check\.+Failed$", shown, re.MULTILINE), shown
    assert "- hook id: nemo-lens-generate" in shown
    assert f'+    {split.upper()}: Final = "{split}"' in shown  # the diff
    assert STALE in shown
    assert _commits(run, repository) == 1  # nothing was committed

    regenerated = run(*GENERATE, cwd=repository)
    assert regenerated.returncode == 0, regenerated.stderr
    status, shown = _commit(run, repository, suite)

    assert status == 0, shown
    assert re.search(r"^nemo-lens generate --check\.+Passed$", shown, re.MULTILINE), shown
    assert _commits(run, repository) == 2


def test_the_shipped_hook_stops_a_commit_whose_generated_files_are_stale(
    run: Shell, hook_repository: tuple[str, str], tmp_path: Path
) -> None:
    url, rev = hook_repository
    config = _configs()["shipped"]
    config = config.replace("<URL of the nemo.lens git repository>", url)
    config = config.replace("<a tag or commit of it>", rev)
    repository = _consumer(tmp_path, run, config)

    # Without this suite's nemo-lens on PATH: the hook runs the one pre-commit installed.
    _stale_then_current(run, repository, suite=False)

    (installed,) = run.pre_commit_home.glob("repo*/py_env-*/bin/nemo-lens")
    assert installed.is_file()


def test_the_local_hook_does_the_same_with_the_nemo_lens_already_installed(
    run: Shell, tmp_path: Path
) -> None:
    repository = _consumer(tmp_path, run, _configs()["local"])

    _stale_then_current(run, repository, suite=True)


def test_the_hook_installs_what_the_codegen_extra_installs() -> None:
    # pre-commit installs the repository without extras, so the hook lists them itself.
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text("utf-8")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    extra = pyproject["project"]["optional-dependencies"]["codegen"]

    listed = re.search(r"^  additional_dependencies: \[(.*)\]$", hooks, re.MULTILINE)

    assert listed, hooks
    assert listed.group(1) == ", ".join(f'"{r}"' for r in extra)
