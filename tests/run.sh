#!/usr/bin/env bash
# The project's tests, with what they need beyond the Python packages: the README's second command.
#
#     bash tests/run.sh [pytest options]
#
# The browser tests (tests/grading/test_browser.py) render pages in Debian's Chromium: it is installed when missing and
# apt-get is there (as root, or through sudo where the user has it); where it cannot be, those tests fail saying so,
# they never skip. Then `python3 -m pytest -q`, its test files shared among one process per CPU (at most 4; pytest-xdist,
# from the dev extra; TEST_WORKERS=N sets how many, 0 runs them in this process alone, without the plugin).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
    if [ "$(id -u)" -eq 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        as_root=(sudo -n)
    else
        as_root=(false)
        echo "tests: chromium is missing and apt-get needs root: the browser tests will fail" >&2
    fi
    if "${as_root[@]}" true; then
        { "${as_root[@]}" apt-get update -qq \
            && "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
            || echo "tests: could not install chromium: the browser tests will fail" >&2
    fi
fi
cpus=$(nproc 2>/dev/null || echo 1)
workers=${TEST_WORKERS:-$(( cpus < 4 ? cpus : 4 ))}
if [ "$workers" -gt 0 ]; then
    exec python3 -m pytest -q -n "$workers" --dist loadfile "$@"
fi
exec python3 -m pytest -q "$@"
