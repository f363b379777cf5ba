#!/usr/bin/env bash
# Create the virtualenv that runs Arize Phoenix for the OTLP integration tests
# (tests/integration/). Phoenix pins ~145 packages (~850 MB), several of which
# would conflict with, or silently upgrade, the project's own dependencies, so it
# lives in a virtualenv of its own and the tests run it as a separate process.
#
# Usage: scripts/phoenix-venv.sh            (idempotent; quiet unless it fails)
#
#   NEMO_LENS_PHOENIX_VENV  where to create it (default: .cache/phoenix-venv in the repo;
#                           the integration tests read the same variable)
#   PHOENIX_PYTHON          the interpreter to build it from (default: the first of
#                           python3.13, python3.12, python3.11, python3 that is >= 3.11,
#                           the oldest Python that Phoenix supports)
#
# A stamp file written after a successful install records the requirement it was
# built for. A second run with the same requirement and a working interpreter does
# nothing; a changed pin, or an install that died half-way (no stamp), rebuilds
# the virtualenv from scratch so it never holds a mix of two versions.
set -euo pipefail

# Bump this (and nothing else) to move the tests to another Phoenix release.
REQUIREMENT='arize-phoenix==20.26.*'

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${NEMO_LENS_PHOENIX_VENV:-$repo_root/.cache/phoenix-venv}"
stamp="$venv/.nemo-lens-phoenix-installed"
log="$(mktemp "${TMPDIR:-/tmp}/phoenix-venv.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

# Run a step with its output captured; show it only when the step fails, so a
# successful run stays silent but a failed one in CI says why.
quietly() {
    if ! "$@" >"$log" 2>&1; then
        echo "phoenix-venv: failed: $*" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

installed_version() {
    # importlib.metadata, not "import phoenix": importing Phoenix takes ~10 s here.
    "$venv/bin/python" -c \
        'from importlib.metadata import version; print(version("arize-phoenix"))' 2>/dev/null
}

# Up to date when the stamp names this requirement and the version it recorded is
# the one installed (a venv whose interpreter is gone fails the second check).
if [[ -f "$stamp" && "$(head -n 1 "$stamp")" == "$REQUIREMENT" ]] \
    && [[ -n "$(sed -n 2p "$stamp")" && "$(installed_version)" == "$(sed -n 2p "$stamp")" ]]; then
    exit 0
fi

pick_python() {
    local candidate
    for candidate in ${PHOENIX_PYTHON:-} python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if ! python="$(pick_python)"; then
    echo "phoenix-venv: Phoenix needs Python >= 3.11; none found (set PHOENIX_PYTHON)" >&2
    exit 1
fi

# Rebuild from scratch, but never delete a directory that is not ours to delete (a
# mistyped NEMO_LENS_PHOENIX_VENV): only a virtualenv or an empty directory goes.
if [[ -e "$venv" ]]; then
    if [[ -f "$venv/pyvenv.cfg" ]] || [[ -d "$venv" && -z "$(ls -A "$venv")" ]]; then
        rm -rf "$venv"
    else
        echo "phoenix-venv: $venv exists and is not a virtualenv; not touching it" >&2
        exit 1
    fi
fi
mkdir -p "$(dirname "$venv")"
quietly "$python" -m venv "$venv"
quietly "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
quietly "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$REQUIREMENT"
quietly "$venv/bin/python" -c 'import phoenix.server.main'

printf '%s\n%s\n' "$REQUIREMENT" "$(installed_version)" >"$stamp"
