#!/usr/bin/env bash
# The GPU run: everything a lent GPU machine can tell us about grading on it, in one call (issue 32). Findings go to
# OUT: log (everything printed), summary.json (each stage: ok, figures, findings), the gradebooks and the hostile
# suite's report. Exit status 0 when every stage found nothing.
#
#     bash benchmarks/gpu/prepare.sh                       # here, once: the wheels into .whl/
#     bash benchmarks/gpu/run.sh OUT [--device cuda] ...   # there (any option of benchmarks/gpu/check.py)
#
# On the lent machine (its own Python 3.12 and CUDA torch, no network) the carried wheels are installed into a
# folder of their own and put first on the path; the machine's torch is used. GPU_WHEELS names another folder of
# wheels; empty, nothing is installed (the CPU dry run, on a machine with the project installed).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: run.sh OUT [check.py options]}
shift
mkdir -p "$out"
exec > >(tee "$out/log") 2>&1
wheels=${GPU_WHEELS-.whl}
if [ -n "$wheels" ]; then
    site=${GPU_SITE:-/opt/grader-site}
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl \
        || { echo "run.sh: the carried wheels did not install"; exit 2; }
    export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"  # the project too: tests run `python -m grader` elsewhere
fi
export PYTHONUNBUFFERED=1
echo "run.sh: $(date -u +%FT%TZ) on $(hostname), python3 $(command -v python3)"
python3 benchmarks/gpu/check.py --out "$out" "$@"
