#!/usr/bin/env bash
# Install what the editor tests (tests/generator/test_taplo.py) need: Taplo, the TOML toolkit
# behind the Even Better TOML editor extension, from npm (@taplo/cli: a WebAssembly build run
# by node, no binary downloaded). The tests run `taplo check` on schemas as an editor would.
#
# Usage: scripts/taplo.sh      (idempotent; quiet unless it fails)
#
#   NEMO_LENS_TAPLO_TOOLS  where the npm package goes (default: .cache/taplo in the repo;
#                          the tests read the same variable)
#
# node and npm come from Debian's packages, installed with apt-get where they are missing
# (which needs root; CI runs as root). The package is pinned here and installed without a
# lock file; a stamp records the pin, so a second run with the same pin does nothing and a
# changed pin reinstalls from scratch.
set -euo pipefail

# Bump this (and nothing else) to move the tests to another release.
PACKAGES=(@taplo/cli@0.7.0)

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${NEMO_LENS_TAPLO_TOOLS:-$repo_root/.cache/taplo}"
stamp="$tools/.nemo-lens-installed"
log="$(mktemp "${TMPDIR:-/tmp}/taplo.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

quietly() {
    if ! "$@" >"$log" 2>&1; then
        echo "taplo: failed: $*" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "taplo: node or npm is missing; install Debian's nodejs and npm packages as root" >&2
        exit 1
    fi
    quietly apt-get update -qq
    quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm
fi

wanted="${PACKAGES[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    exit 0
fi
rm -rf "$tools"
mkdir -p "$tools"
# A package.json of its own, so npm installs here and not into a parent directory's project.
echo '{"name": "nemo-lens-taplo", "private": true}' >"$tools/package.json"
quietly npm install --prefix "$tools" --no-save --no-package-lock --no-audit --no-fund \
    "${PACKAGES[@]}"
echo "$wanted" >"$stamp"
