#!/usr/bin/env bash
# Write requirements/<extra>.lock: the exact versions, with hashes, of the core alone and of the
# core with each extra (dev holds everything: `make setup` installs it). Versions are kept as in
# the current dev.lock unless UPGRADE=1. Needs uv (pip install uv).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
constraint=()
if [ -z "${UPGRADE:-}" ] && [ -f requirements/dev.lock ]; then
    constraint=(-c requirements/dev.lock)
fi
for extra in core app dask testbed dev; do
    args=()
    [ "$extra" = core ] || args=(--extra "$extra")
    "$UV" pip compile pyproject.toml "${args[@]}" "${constraint[@]}" --generate-hashes \
        --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --quiet \
        --custom-compile-command "tools/locks.sh" -o "requirements/$extra.lock.new"
done
# The backtesters' own environment (.venv-backtest): resolved alone, their pins differ from dev's.
"$UV" pip compile pyproject.toml --extra backtest --generate-hashes \
    --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --quiet \
    --custom-compile-command "tools/locks.sh" -o "requirements/backtest.lock.new"
for extra in core app dask testbed dev backtest; do
    mv "requirements/$extra.lock.new" "requirements/$extra.lock"
done
