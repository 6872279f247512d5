#!/usr/bin/env bash
# The benchmarks: writes docs/performance.md and benchmarks/results/<time>.json. Needs root.
# Not part of the test command. Usage: ./scripts/benchmark.sh [--quick] [--case NAME ...]
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

setup_all
exec "$VENV/bin/python" "$REPO_ROOT/benchmarks/run.py" "$@"
