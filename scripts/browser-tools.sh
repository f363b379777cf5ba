#!/usr/bin/env bash
# Install what the browser tests (tests/cli/test_browser.py) need: Debian's chromium, and
# from npm playwright-core (drives that chromium; it downloads no browser of its own) and
# speedscope (a third-party trace viewer that works offline, the check of convert's output).
#
# Usage: scripts/browser-tools.sh      (idempotent; quiet unless it fails)
#
#   NEMO_LENS_BROWSER_TOOLS  where the npm packages go (default: .cache/browser-tools in the
#                            repo; the tests read the same variable)
#
# chromium is installed with apt-get, which needs root (CI runs as root); where it is
# already on the PATH nothing is installed. The npm packages are pinned here and installed
# without a lock file; a stamp records the pins, so a second run with the same pins does
# nothing and a changed pin reinstalls from scratch.
set -euo pipefail

# Bump these (and nothing else) to move the tests to other releases.
PACKAGES=(playwright-core@1.65.1 speedscope@1.25.0)

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="${NEMO_LENS_BROWSER_TOOLS:-$repo_root/.cache/browser-tools}"
stamp="$tools/.nemo-lens-installed"
log="$(mktemp "${TMPDIR:-/tmp}/browser-tools.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

quietly() {
    if ! "$@" >"$log" 2>&1; then
        echo "browser-tools: failed: $*" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "browser-tools: chromium is missing; install Debian's chromium package as root" >&2
        exit 1
    fi
    quietly apt-get update -qq
    quietly env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi

wanted="${PACKAGES[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    exit 0
fi
rm -rf "$tools"
mkdir -p "$tools"
# A package.json of its own, so npm installs here and not into a parent directory's project.
echo '{"name": "nemo-lens-browser-tools", "private": true}' >"$tools/package.json"
quietly npm install --prefix "$tools" --no-save --no-package-lock --no-audit --no-fund \
    "${PACKAGES[@]}"
echo "$wanted" >"$stamp"
