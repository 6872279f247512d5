#!/usr/bin/env bash
# The test command: set-up, lint, sanity, unit, integration, molecule, docs and build checks.
# Every stage runs even when an earlier one failed; the summary's last line is read by CI:
#   stages: <passed> passed, <failed> failed
# Run as root on Debian 12 from anywhere: ./scripts/test.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# A stage exits with this status when there is nothing to test yet (automake's convention).
SKIPPED=77

skip() {
  echo "SKIPPED: $*"
  exit "$SKIPPED"
}

stage_setup() {
  setup_all
  ensure_offline_pip_bootstrap
}

stage_lint() {
  cd "$REPO_ROOT"
  # Playbooks in molecule/ and tests/ use cnikit.cni.* by name; the in-place copy resolves them.
  ANSIBLE_COLLECTIONS_PATH="$INPLACE_COLLECTIONS" ansible-lint --offline
}

stage_sanity() {
  local tree
  tree="$(sync_test_tree "$BUILD_DIR/ansible-test")"
  cd "$tree"
  ansible-test sanity --local --python 3.11 --color no
}

stage_units() {
  cd "$REPO_ROOT"
  # functional and reliability run the real plugin binaries as root, on prefixed namespaces.
  local suites=(tests/unit) suite
  for suite in tests/functional tests/reliability; do
    [[ -d $suite ]] && suites+=("$suite")
  done
  # pytest exits 5 when it collects nothing; that only means "skip" while no test file exists.
  [[ -n "$(find "${suites[@]}" -name 'test_*.py' -print -quit)" ]] || skip "no test files in ${suites[*]}"
  PYTHONPATH="$INPLACE_COLLECTIONS" python -m pytest "${suites[@]}"
}

stage_integration() {
  compgen -G "$REPO_ROOT/tests/integration/targets/*/aliases" >/dev/null \
    || skip "no integration targets in tests/integration/targets"
  local tree
  tree="$(sync_test_tree "$BUILD_DIR/ansible-test")"
  cd "$tree"
  ansible-test integration --local --python 3.11 --allow-destructive --continue-on-error \
    --color no
}

stage_molecule() {
  cd "$REPO_ROOT"
  compgen -G "molecule/*/molecule.yml" >/dev/null || skip "no scenario in molecule/"
  # The scenarios live at the top level; naming the glob keeps molecule out of its collection
  # mode (extensions/molecule) without the "should migrate" warning.
  # Each scenario points ANSIBLE_COLLECTIONS_PATH at the in-place copy itself.
  MOLECULE_GLOB='molecule/*/molecule.yml' molecule test --all
}

stage_docs() {
  cd "$REPO_ROOT"
  "$REPO_ROOT/scripts/gen-docs.sh"
  local stale
  stale="$(git status --porcelain --untracked-files=all -- docs/reference/)"
  if [[ -n "$stale" ]]; then
    echo "docs/reference/ differs from what is committed; run scripts/gen-docs.sh and commit it:"
    echo "$stale"
    git --no-pager diff --stat -- docs/reference/
    return 1
  fi
  antsibull-changelog lint
}

stage_build() {
  local tarball
  tarball="$(build_and_install_collection)"
  local unwanted
  unwanted="$(tar -tzf "$tarball" | grep -E '(^|/)(\.venv|\.build|__pycache__)(/|$)|^tests/output(/|$)' || true)"
  if [[ -n "$unwanted" ]]; then
    echo "the tarball holds files it must not:"
    echo "$unwanted"
    return 1
  fi
  # Every module and role is tried, so one broken DOCUMENTATION does not hide another.
  local plugin failed=0
  for plugin in "$REPO_ROOT"/plugins/modules/*.py "$REPO_ROOT"/roles/*/; do
    [[ -e "$plugin" ]] || continue
    local type=module
    [[ $plugin == */ ]] && type=role
    plugin="cnikit.cni.$(basename "$plugin" .py)"
    echo "ansible-doc -t $type $plugin"
    # ansible-doc prints nothing, and exits 0, for a role it finds no argument specs for.
    ANSIBLE_COLLECTIONS_PATH="$INSTALLED_COLLECTIONS" ansible-doc -t "$type" "$plugin" \
      | grep . >/dev/null || { echo "no documentation rendered for $plugin"; failed=1; }
  done
  return "$failed"
}

STAGES=(setup lint sanity units integration molecule docs build)
declare -A RESULT SECONDS_TAKEN

run_stage() {
  local name="$1" start=$SECONDS rc
  log "stage $name"
  # set -e is ignored inside a subshell run as a condition, so switch it off around the call.
  set +e
  (set -e; "stage_$name")
  rc=$?
  set -e
  SECONDS_TAKEN[$name]=$((SECONDS - start))
  case $rc in
    0) RESULT[$name]=passed ;;
    "$SKIPPED") RESULT[$name]=skipped ;;
    *) RESULT[$name]="failed (exit $rc)" ;;
  esac
  echo "--- stage $name: ${RESULT[$name]} in ${SECONDS_TAKEN[$name]}s"
}

main() {
  local name passed=0 failed=0
  for name in "${STAGES[@]}"; do
    run_stage "$name"
    # Later stages need the virtualenv that setup made, on PATH in this shell too.
    [[ $name == setup ]] && activate_venv
  done
  log "summary"
  for name in "${STAGES[@]}"; do
    printf '%-12s %-18s %5ss\n' "$name" "${RESULT[$name]}" "${SECONDS_TAKEN[$name]}"
    if [[ ${RESULT[$name]} == failed* ]]; then
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
  done
  echo "stages: $passed passed, $failed failed"
  ((failed == 0))
}

main
