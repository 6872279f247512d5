#!/usr/bin/env bash
# The test command: set-up, lint, sanity, unit, the support matrix, integration, molecule, docs
# and build checks. Every stage runs even when an earlier one failed; the summary's last line is
# read by CI:
#   stages: <passed> passed, <failed> failed
# Run as root on Debian 12 from anywhere: ./scripts/test.sh [stage...]
# With stage names, only those run (setup first, always: the others need its virtualenv).
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

# Tests of the real-binary suites whose result cannot depend on the plugin release (parsers,
# names, tarballs, file modes), and the upgrade test, which uses every release itself: run in the
# first release's pass only.
RELEASE_INDEPENDENT_TESTS=(tests/reliability/test_fuzz.py tests/reliability/test_hostile_input.py
  tests/reliability/test_tarballs.py tests/reliability/test_hygiene.py tests/functional/test_upgrade_real.py)

# Stages run once per plugin release (scripts/lib.sh, plugin_releases), as <stage>@<release>;
# each reads the release from CNIKIT_TEST_PLUGIN_RELEASE.
RELEASE_STAGES=(units managed_nodes integration)

# True when the stage runs against the first plugin release, Debian 12's own: release-independent
# tests run there only.
first_release() {
  [[ $CNIKIT_TEST_PLUGIN_RELEASE == "$(debian_plugin_release)" ]]
}

stage_units() {
  cd "$REPO_ROOT"
  # functional, differential and reliability run the real plugin binaries as root, on prefixed
  # namespaces. reliability comes last: its tests import helpers from its own conftest.py.
  local suites=() suite ignored=()
  first_release && suites+=(tests/unit)
  for suite in tests/functional tests/differential tests/reliability; do
    [[ -d $suite ]] && suites+=("$suite")
  done
  first_release || for suite in "${RELEASE_INDEPENDENT_TESTS[@]}"; do ignored+=("--ignore=$suite"); done
  # pytest exits 5 when it collects nothing; that only means "skip" while no test file exists.
  [[ -n "$(find "${suites[@]}" -name 'test_*.py' -print -quit)" ]] || skip "no test files in ${suites[*]}"
  PYTHONPATH="$INPLACE_COLLECTIONS" python -m pytest "${ignored[@]}" "${suites[@]}"
}

# One row of the matrix failed, or could not run: CI must see it, a developer may lack a Python.
row_unavailable() {
  if [[ ${CI:-} == true ]]; then
    echo "FAILED: $*"
    return 1
  fi
  echo "SKIPPED (not in CI): $*"
}

# Runs "<label> <command...>" and appends "<label> passed|failed in <n>s" to the array ROW_PARTS.
run_part() {
  local label="$1" start=$SECONDS
  shift
  if "$@"; then
    ROW_PARTS+=("$label passed in $((SECONDS - start))s")
  else
    ROW_PARTS+=("$label FAILED in $((SECONDS - start))s")
    return 1
  fi
}

# Every sanity test but pylint, the slowest by far (its own virtualenv per ansible-core line, then
# minutes of CPU); the sanity stage runs it, on ansible-core 2.19.
controller_sanity() {
  local venv="$1" python="$2" tree
  tree="$(sync_test_tree "$BUILD_DIR/ansible-test-matrix")"
  (cd "$tree" && PATH="$venv/bin:$PATH" ansible-test sanity --local --python "$python" --skip-test pylint --color no)
}

controller_units() {
  local venv="$1"
  (cd "$REPO_ROOT" && PYTHONPATH="$INPLACE_COLLECTIONS" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit)
}

# Sanity and unit tests under each ansible-core line of CONTROLLER_ROWS (scripts/lib.sh).
stage_controllers() {
  local row core python libs interpreter venv failed=0 rows=()
  for row in "${CONTROLLER_ROWS[@]}"; do
    read -r core python libs <<<"$row"
    local label="ansible-core $core, controller Python $python, $libs libraries"
    log "$label"
    if ! interpreter="$(find_python "$python")"; then
      rows+=("$label: no Python $python"); row_unavailable "$label: no Python $python" || failed=1
      continue
    fi
    venv="$({ echo "ansible-core==$core.*"; echo pytest; echo hypothesis; managed_node_requirements "$libs"; } \
      | ensure_build_venv "controller-$core-py$python-$libs" "$interpreter")"
    "$venv/bin/pip" list --format freeze 2>/dev/null | grep -iE '^(ansible-core|jsonschema|pyroute2)='
    ensure_offline_pip_bootstrap "$venv/bin/python"
    ROW_PARTS=()
    run_part sanity controller_sanity "$venv" "$python" || failed=1
    run_part units controller_units "$venv" || failed=1
    rows+=("$label: ${ROW_PARTS[*]}")
  done
  log "controller rows (ansible-core 2.19 on Python 3.11, pinned libraries: the sanity and units stages)"
  printf '  %s\n' "${rows[@]}"
  return "$failed"
}

# The modules run for real by each managed-node Python of MANAGED_NODE_ROWS (scripts/lib.sh), by
# Debian's own Python 3 with its packaged libraries, then their failures without the libraries
# and without root.
# With a later plugin release, only Debian's own Python runs the modules: the rows differ in Python
# and libraries, which the plugin release does not touch.
stage_managed_nodes() {
  local row python libs interpreter venv failed=0 rows=() label
  local -a interpreters=() labels=()
  local plugins="$RELEASES_DIR/plugins-$CNIKIT_TEST_PLUGIN_RELEASE.json"
  first_release || MANAGED_NODE_ROWS=()
  for row in "${MANAGED_NODE_ROWS[@]}"; do
    read -r python libs <<<"$row"
    label="managed Python $python, $libs libraries"
    if ! interpreter="$(find_python "$python")"; then
      rows+=("$label: no Python $python"); row_unavailable "$label: no Python $python" || failed=1
      continue
    fi
    venv="$(managed_node_requirements "$libs" | ensure_build_venv "node-py$python-$libs" "$interpreter")"
    interpreters+=("$venv/bin/python"); labels+=("$label")
  done
  interpreters+=(/usr/bin/python3); labels+=("managed Python $(/usr/bin/python3 -V | cut -d' ' -f2) of Debian, its python3-jsonschema and python3-pyroute2")
  local i
  for i in "${!interpreters[@]}"; do
    log "${labels[$i]}"
    "${interpreters[$i]}" -c 'import jsonschema, pyroute2, sys; from importlib.metadata import version
print(sys.executable, sys.version.split()[0], "jsonschema", version("jsonschema"), "pyroute2", version("pyroute2"))'
    ROW_PARTS=()
    run_part modules managed_node_playbook modules.yml -e "ansible_python_interpreter=${interpreters[$i]}" \
      -e "@$plugins" || failed=1
    rows+=("${labels[$i]}: ${ROW_PARTS[*]}")
  done
  if ! first_release; then
    log "managed-node rows with plugins $CNIKIT_TEST_PLUGIN_RELEASE"
    printf '  %s\n' "${rows[@]}"
    return "$failed"
  fi
  local bare
  bare="$(true | ensure_build_venv node-without-libraries "$(find_python 3.11)")"
  log "managed node without the libraries, and without root"
  ROW_PARTS=()
  run_part failures managed_node_playbook failures.yml -e "python_without_libraries=$bare/bin/python" || failed=1
  rows+=("no libraries, no root: ${ROW_PARTS[*]}")
  log "managed-node rows (driven by ansible-core $(ansible --version | head -1 | grep -oE '[0-9]+\.[0-9]+\.[0-9]+'))"
  printf '  %s\n' "${rows[@]}"
  return "$failed"
}

# <playbook> [ansible-playbook arguments]: a playbook of tests/managed-node on localhost.
managed_node_playbook() {
  (cd "$REPO_ROOT/tests/managed-node" && ANSIBLE_COLLECTIONS_PATH="$INPLACE_COLLECTIONS" \
    ansible-playbook -i localhost, -c local "$@")
}

stage_integration() {
  compgen -G "$REPO_ROOT/tests/integration/targets/*/aliases" >/dev/null \
    || skip "no integration targets in tests/integration/targets"
  local tree targets=()
  tree="$(sync_test_tree "$BUILD_DIR/ansible-test")"
  cd "$tree"
  # ansible-test gives this file to every target as extra variables: the plugin release under test.
  cp "$RELEASES_DIR/plugins-$CNIKIT_TEST_PLUGIN_RELEASE.json" tests/integration/integration_config.yml
  # The installer's targets serve tarballs built from Debian's binaries: one release is enough.
  first_release || targets=(--exclude cni_plugin_install --exclude role_plugins)
  ansible-test integration --local --python 3.11 --allow-destructive --continue-on-error \
    --color no "${targets[@]}"
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
  # grep reads the whole list: with -q it would stop early and tar's SIGPIPE fail the pipeline.
  tar -tzf "$tarball" | grep -x LICENSE >/dev/null || { echo "the tarball holds no LICENSE"; return 1; }
  # ansible-builder reads meta/execution-environment.yml from the installed copy, as an EE build does.
  local builder requirements
  builder="$(echo ansible-builder | ensure_build_venv ansible-builder "$VENV/bin/python")"
  requirements="$("$builder/bin/ansible-builder" introspect --sanitize "$INSTALLED_COLLECTIONS")"
  echo "$requirements"
  if ! grep -q "^- 'jsonschema>=.* # from collection cnikit.cni'$" <<<"$requirements" \
    || ! grep -q "^- 'iproute2 .* # from collection cnikit.cni'$" <<<"$requirements"; then
    echo "ansible-builder finds no Python or system requirements of cnikit.cni"
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

ALL_STAGES=(setup lint sanity units controllers managed_nodes integration molecule docs build)
declare -A RESULT SECONDS_TAKEN

# <stage> or <stage>@<plugin release>.
run_stage() {
  local name="$1" start=$SECONDS rc
  log "stage $name"
  # set -e is ignored inside a subshell run as a condition, so switch it off around the call.
  set +e
  (set -e; [[ $name != *@* ]] || export CNIKIT_TEST_PLUGIN_RELEASE="${name#*@}"; "stage_${name%@*}")
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

# The stages named on the command line, in the order given, after setup; all of them without.
# A release-dependent stage (RELEASE_STAGES) may name one plugin release: units@1.9.1.
select_stages() {
  local name
  REQUESTED=()
  (($#)) || { REQUESTED=("${ALL_STAGES[@]:1}"); return; }
  for name in "$@"; do
    if [[ " ${ALL_STAGES[*]} " != *" ${name%@*} "* ]] \
      || [[ $name == *@* && " ${RELEASE_STAGES[*]} " != *" ${name%@*} "* ]]; then
      echo "unknown stage '$name'; the stages are: ${ALL_STAGES[*]};" \
        "${RELEASE_STAGES[*]} take @<plugin release>" >&2
      exit 2
    fi
    [[ $name == setup ]] || REQUESTED+=("$name")
  done
}

# STAGES: the requested stages, each of RELEASE_STAGES once per plugin release (known after setup).
expand_stages() {
  local name release releases
  releases="$(plugin_releases)"
  STAGES=()
  for name in "${REQUESTED[@]}"; do
    if [[ $name == *@* && " $releases " != *" ${name#*@} "* ]]; then
      echo "unknown plugin release in '$name'; the releases are: $releases" >&2
      exit 2
    elif [[ $name == *@* || " ${RELEASE_STAGES[*]} " != *" $name "* ]]; then
      STAGES+=("$name")
    else
      for release in $releases; do STAGES+=("$name@$release"); done
    fi
  done
}

main() {
  local name passed=0 failed=0
  select_stages "$@"
  run_stage setup
  # Later stages need the virtualenv that setup made, on PATH in this shell too.
  activate_venv
  expand_stages
  for name in "${STAGES[@]}"; do
    run_stage "$name"
  done
  log "summary"
  for name in setup "${STAGES[@]}"; do
    printf '%-20s %-18s %5ss\n' "$name" "${RESULT[$name]}" "${SECONDS_TAKEN[$name]}"
    if [[ ${RESULT[$name]} == failed* ]]; then
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
  done
  echo "stages: $passed passed, $failed failed"
  ((failed == 0))
}

main "$@"
