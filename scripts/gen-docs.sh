#!/usr/bin/env bash
# Regenerate the module and role reference in docs/reference/ from the collection's own
# documentation. Commit the result: the test command fails when docs/ is stale.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_venv
collection="$(sync_test_tree "$BUILD_DIR/docs")"
python "$REPO_ROOT/scripts/gen_docs.py" --collection "$collection" --dest "$REPO_ROOT/docs/reference"
