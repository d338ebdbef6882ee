#!/usr/bin/env bash
# Prepare the GPU run (benchmarks/gpu/run.sh) here, where the package registries are reachable: download as wheels
# the pure-Python packages grading needs that a lent GPU machine (its own Python 3.12 and CUDA torch, no network)
# may lack or hold in other versions, into .whl/ (ignored by git; the device tool carries it).
#
#     bash benchmarks/gpu/prepare.sh [FOLDER]       # default: .whl in the repository root
#
# torch is left out on purpose (the machine's CUDA build is used), and so are the authoring-only packages
# (nbgrader, matplotlib, dask): grading and the GPU run import none of them.
set -euo pipefail
cd "$(dirname "$0")/../.."
folder=${1:-.whl}
python_version=${GPU_PYTHON_VERSION:-3.12}
mkdir -p "$folder"
# The pins of pyproject.toml, for the packages grading imports.
mapfile -t wanted < <(python3 benchmarks/gpu/requirements.py)
platforms=()
for n in 17 24 27 28 31 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: --dest "$folder" \
    --python-version "$python_version" --implementation cp --platform manylinux2014_x86_64 "${platforms[@]}" \
    "${wanted[@]}"
du -sh "$folder"
