#!/usr/bin/env bash
# The test command: set-up, lint, sanity, unit, the support matrix, integration, molecule, docs
# and build checks. Every stage runs even when an earlier one failed; the summary's last line is
# read by CI:
#   stages: <passed> passed, <failed> failed
# Run as root on Debian 12 from anywhere: ./scripts/test.sh [stage...]
# With stage names, only those run (setup first, always: the others need its virtualenv).
# Two lanes share the machine: the stages of REAL_STAGES one after another, their output shown as
# it comes; the others beside them, their output shown once both lanes are done (each stage's log
# is in .build/stage-logs meanwhile).
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

# Every sanity test but pylint, which runs once, on the newest ansible-core lines of the
# controllers stage (PYLINT_FROM_LINE).
stage_sanity() {
  local tree
  # A copy of its own: the integration stage's runs meanwhile (see main).
  tree="$(sync_test_tree "$BUILD_DIR/ansible-test-sanity")"
  cd "$tree"
  ansible-test sanity --local --python 3.11 --skip-test pylint --color no
}

# Tests of the real-binary suites whose result cannot depend on the plugin release (parsers,
# names, tarballs, file modes, hostile cache state, the fleet recipe's check mode), and the upgrade
# and dhcp tests, which use every release themselves: run in the first release's pass only.
RELEASE_INDEPENDENT_TESTS=(tests/reliability/test_fuzz.py tests/reliability/test_hostile_input.py
  tests/reliability/test_tarballs.py tests/reliability/test_hygiene.py tests/reliability/test_hostile_state.py
  tests/functional/test_upgrade_real.py tests/functional/test_dhcp_real.py tests/functional/test_fleet_rolling_check.py)

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
  local suites=() suite ignored=() failed=0
  first_release && { unit_tests "$VENV" || failed=1; }
  for suite in tests/functional tests/differential tests/reliability; do
    [[ -d $suite ]] && suites+=("$suite")
  done
  first_release || for suite in "${RELEASE_INDEPENDENT_TESTS[@]}"; do ignored+=("--ignore=$suite"); done
  # pytest exits 5 when it collects nothing; that only means "skip" while no test file exists.
  [[ -n "$(find "${suites[@]}" -name 'test_*.py' -print -quit)" ]] || skip "no test files in ${suites[*]}"
  PYTHONPATH="$INPLACE_COLLECTIONS" python -m pytest "${ignored[@]}" "${suites[@]}" || failed=1
  return "$failed"
}

# <venv>: tests/unit under that virtualenv's Python. They need neither root nor the network and
# share no state, so pytest-xdist spreads them over every CPU: they are most of a controller
# row's time.
unit_tests() {
  (cd "$REPO_ROOT" && PYTHONPATH="$INPLACE_COLLECTIONS" "$1/bin/python" -m pytest -q -p no:cacheprovider \
    --numprocesses auto tests/unit)
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

# <line> <minimum>: whether ansible-core line <line> (2.21) is <minimum> or later.
line_at_least() {
  [[ "$(printf '%s\n' "$2" "$1" | sort -V | head -1)" == "$2" ]]
}

# pylint is the slowest sanity test by far (its own virtualenv per ansible-core line, then minutes
# of CPU), so it runs where it is needed: on the rows from this line on, whose checks the older
# lines lack (ansible-bad-function on subprocess, for one), and nowhere else.
PYLINT_FROM_LINE=2.21

# Why pylint cannot run on this row's ansible-core, or nothing when it can: ansible-test installs
# its pinned pylint requirements into a virtualenv, and a requirement given as a direct URL
# (2.22.0rc1 takes dill from a source archive on GitHub) cannot come from the package index.
pylint_unavailable() {
  local venv="$1" core="$2" requirements
  line_at_least "$core" "$PYLINT_FROM_LINE" \
    || { echo "pylint runs from ansible-core $PYLINT_FROM_LINE on"; return; }
  requirements="$("$venv/bin/python" -c 'import ansible_test, pathlib
print(pathlib.Path(ansible_test.__file__).parent / "_data/requirements/sanity.pylint.txt")')"
  grep -E '^[^#].* @ ' "$requirements" | sed 's/^/its pylint requirements name a direct URL, not the package index: /' || true
}

# Every sanity test, pylint only where pylint_unavailable says nothing.
controller_sanity() {
  local venv="$1" python="$2" core="$3" tree skip_pylint=() reason
  reason="$(pylint_unavailable "$venv" "$core")"
  if [[ -n $reason ]]; then
    echo "pylint skipped on ansible-core $core: $reason"
    skip_pylint=(--skip-test pylint)
  fi
  tree="$(sync_test_tree "$BUILD_DIR/ansible-test-matrix")"
  (cd "$tree" && PATH="$venv/bin:$PATH" ansible-test sanity --local --python "$python" "${skip_pylint[@]}" --color no)
}

# The module and role reference as this row's ansible-doc renders it must be docs/reference/ as
# committed (rendered with 2.19 by the docs stage); gen_docs.py runs in the development venv.
REFERENCE_FROM_LINE=2.19

controller_reference() {
  local venv="$1" out="$BUILD_DIR/reference-check"
  rm -rf "$out"
  PATH="$venv/bin:$PATH" "$VENV/bin/python" "$REPO_ROOT/scripts/gen_docs.py" \
    --collection "$(sync_test_tree "$BUILD_DIR/docs-matrix")" --dest "$out" \
    && diff -r "$REPO_ROOT/docs/reference" "$out"
}

# Sanity and unit tests under each ansible-core line of CONTROLLER_ROWS (scripts/lib.sh), and from
# REFERENCE_FROM_LINE on the reference as that line renders it.
stage_controllers() {
  local row core python libs prerelease interpreter venv failed=0 rows=()
  for row in "${CONTROLLER_ROWS[@]}"; do
    read -r core python libs prerelease <<<"$row"
    local label="ansible-core $core, controller Python $python, $libs libraries"
    log "$label"
    if ! interpreter="$(find_python "$python")"; then
      rows+=("$label: no Python $python"); row_unavailable "$label: no Python $python" || failed=1
      continue
    fi
    venv="$({ controller_core_requirement "$core" "$prerelease"; echo pytest; echo pytest-xdist; echo hypothesis; managed_node_requirements "$libs"; } \
      | ensure_build_venv "controller-$core-py$python-$libs" "$interpreter")"
    "$venv/bin/pip" list --format freeze 2>/dev/null | grep -iE '^(ansible-core|jsonschema|pyroute2)='
    ensure_offline_pip_bootstrap "$venv/bin/python"
    ROW_PARTS=()
    run_part sanity controller_sanity "$venv" "$python" "$core" || failed=1
    run_part units unit_tests "$venv" || failed=1
    if line_at_least "$core" "$REFERENCE_FROM_LINE"; then
      run_part reference controller_reference "$venv" || failed=1
    fi
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
  python "$REPO_ROOT/scripts/guides_rst.py" --check
  antsibull-changelog lint
  docs_site
}

# The collection's docs site, built by antsibull-docs' own commands as docs.ansible.com's tools
# take the collection (module and role pages, the guides of docs/docsite/rst/, the changelog,
# docs/docsite/links.yml), from a copy laid out as installed, into .build/docsite/build/html.
# The linter's findings fail the stage, and so does every warning of the build that concerns the
# collection's own pages; the build's other warnings (network inventories out of reach, pages
# antsibull-docs writes for every site) are reported (scripts/docsite.py tells them apart).
docs_site() {
  local tree site="$BUILD_DIR/docsite"
  tree="$(sync_test_tree "$BUILD_DIR/docsite-collection")"
  (
    export ANSIBLE_COLLECTIONS_PATH="$BUILD_DIR/docsite-collection"
    cd "$tree"
    antsibull-docs lint-collection-docs --plugin-docs .
    rm -rf "$site"
    mkdir -p "$site"
    chmod og-w "$site"  # antsibull-docs wants it so
    antsibull-docs sphinx-init --use-current --dest-dir "$site" cnikit.cni >/dev/null
    cd "$site"
    # build.sh fails on any warning (sphinx-build -W --keep-going); its stderr holds them.
    local status=0
    ./build.sh >build.log 2>warnings.log || status=$?
    python "$REPO_ROOT/scripts/docsite.py" warnings --status "$status" warnings.log
    echo "docs site: $site/build/html/index.html"
  )
}

stage_build() {
  local tarball
  tarball="$(build_and_install_collection)"
  local unwanted
  # Test and development content stays out (galaxy.yml's build_ignore): tests/config.yml alone of tests/ ships.
  unwanted="$(tar -tzf "$tarball" | grep -E '(^|/)(\.venv|\.build|__pycache__)(/|$)|^(molecule|scripts|playbooks|benchmarks)/|^tests/.' \
    | grep -vx 'tests/config.yml' || true)"
  if [[ -n "$unwanted" ]]; then
    echo "the tarball holds files it must not:"
    echo "$unwanted"
    return 1
  fi
  # grep reads the whole list: with -q it would stop early and tar's SIGPIPE fail the pipeline.
  tar -tzf "$tarball" | grep -x LICENSE >/dev/null || { echo "the tarball holds no LICENSE"; return 1; }
  # galaxy-importer brings the ansible-builder (and bindep) that Galaxy runs.
  local galaxy
  galaxy="$(echo "$GALAXY_IMPORTER" | ensure_build_venv galaxy-importer "$VENV/bin/python")"
  galaxy_import "$galaxy" "$tarball" || return 1
  execution_environment "$galaxy" "$tarball" || return 1
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

# What Galaxy runs on every upload.
GALAXY_IMPORTER="galaxy-importer==0.4.44"

# galaxy-importer gives its ansible-lint call 180 s of wall time, then logs "ERROR: Timeout on call
# to ansible-lint". The call may take at most this many CPU seconds on the built tarball: a third of
# the budget, so that the import still passes on an importer three times slower or shared by three
# imports at once. CPU seconds, not wall: the wall time here depends on what else this machine runs
# (it is printed beside them).
LINT_CPU_BUDGET=60

# <venv> <tarball>: galaxy-importer with Automation Hub's settings (tests/galaxy-importer.cfg: flake8
# on every plugin, ansible-lint on the collection), locally: no container. It exits 0 after the
# findings it only logs, so any ERROR or WARNING line it logs fails the stage. Its ansible-lint call
# is timed (scripts/timed-ansible-lint.sh) and held to LINT_CPU_BUDGET.
galaxy_import() {
  local output timer="$BUILD_DIR/lint-timer" times="$BUILD_DIR/lint-timer/times"
  rm -rf "$timer"
  mkdir -p "$timer"
  ln -s "$REPO_ROOT/scripts/timed-ansible-lint.sh" "$timer/ansible-lint"
  # It runs ansible-doc, flake8 and ansible-lint from PATH: its own, ansible-lint through the timer.
  output="$(cd "$BUILD_DIR" && PATH="$timer:$1/bin:$PATH" GALAXY_IMPORTER_CONFIG="$REPO_ROOT/tests/galaxy-importer.cfg" \
    CNIKIT_REAL_ANSIBLE_LINT="$1/bin/ansible-lint" CNIKIT_LINT_TIMES="$times" \
    "$1/bin/python" -m galaxy_importer.main "$2" 2>&1)" || { echo "$output"; return 1; }
  grep -vE '^Loading ' <<<"$output"
  if grep -qE '^(ERROR|WARNING|CRITICAL)' <<<"$output"; then
    echo "galaxy-importer logged errors or warnings, listed above"
    return 1
  fi
  grep -q '^Importer processing completed successfully' <<<"$output" || return 1
  lint_within_budget "$times"
}

# <times file>: prints the importer's ansible-lint call's wall and CPU seconds; fails past LINT_CPU_BUDGET.
lint_within_budget() {
  [[ -s $1 ]] || { echo "galaxy-importer did not run ansible-lint"; return 1; }
  local wall user system
  read -r wall user system <"$1"
  awk -v wall="$wall" -v user_cpu="$user" -v system_cpu="$system" -v budget="$LINT_CPU_BUDGET" 'BEGIN {
    cpu = user_cpu + system_cpu
    printf "galaxy-importer: its ansible-lint call took %.1f s wall, %.1f CPU s (at most %d CPU s)\n", wall, cpu, budget
    exit cpu > budget }' || { echo "ansible-lint costs the importer more than $LINT_CPU_BUDGET CPU s"; return 1; }
}

# <venv> <tarball>: the requirements ansible-builder finds in the installed collection, per
# platform (tests/ee/expected-requirements.yml), and the build context of an execution
# environment holding the tarball (tests/ee/execution-environment.yml; no container is built).
execution_environment() {
  local venv="$1" ee="$BUILD_DIR/ee"
  rm -rf "$ee"
  mkdir -p "$ee/dist"
  "$venv/bin/ansible-builder" introspect "$INSTALLED_COLLECTIONS" \
    --write-pip "$ee/requirements.txt" --write-bindep "$ee/bindep.txt" >/dev/null
  "$venv/bin/python" "$REPO_ROOT/tests/utils/check_ee_requirements.py" \
    "$REPO_ROOT/tests/ee/expected-requirements.yml" "$ee/requirements.txt" "$ee/bindep.txt" || return 1
  cp "$REPO_ROOT/tests/ee/execution-environment.yml" "$ee/"
  cp "$2" "$ee/dist/cnikit-cni.tar.gz"
  (cd "$ee" && "$venv/bin/ansible-builder" create --file execution-environment.yml --context context) || return 1
  cmp -s "$2" "$ee/context/_build/collections/cnikit-cni.tar.gz" \
    || { echo "the execution environment's build context lacks the tarball"; return 1; }
  grep -q 'ansible-galaxy collection install' "$ee/context/Containerfile" \
    || { echo "the Containerfile does not install the collection"; return 1; }
}

ALL_STAGES=(setup lint sanity units controllers managed_nodes integration molecule docs build)

# The stages that run the real plugins as root, in namespaces, bridges and iptables chains of
# their own: one at a time, for each test's teardown removes everything of its prefix. The others
# need only CPU and files of their own, and run beside them.
REAL_STAGES=(units managed_nodes integration molecule)

# Each stage's output is kept in $STAGE_LOGS/<stage>.log, for the summary's failure lines, and
# its outcome in <stage>.result: "<result><TAB><wall seconds><TAB><CPU seconds>".
STAGE_LOGS="$BUILD_DIR/stage-logs"

# <stage> or <stage>@<plugin release>, in a subshell that stops at the first failing command and,
# as it exits, leaves its CPU times (its own and its finished children's) in <stage>.times. The
# subshell counts the stage alone: the shell running both lanes would also count the other lane,
# as soon as it reaped it.
stage_body() {
  # shellcheck disable=SC2064  # the file's name is fixed now: at exit, $1 may be a function's
  (trap "times >$(printf %q "$STAGE_LOGS/$1.times")" EXIT
   set -e; [[ $1 != *@* ]] || export CNIKIT_TEST_PLUGIN_RELEASE="${1#*@}"; "stage_${1%@*}")
}

# <stage>: the CPU seconds (user and system) stage_body's times file says the stage took.
stage_cpu_seconds() {
  [[ -e $STAGE_LOGS/$1.times ]] || { echo -; return; }
  tr ' ' '\n' <"$STAGE_LOGS/$1.times" \
    | awk '{ split($0, p, /[ms]/); total += p[1] * 60 + p[2] } END { printf "%d\n", total }'
}

# <stage> <live|quiet>: runs the stage, its output shown as it comes (live) or only kept in its log
# (quiet: shown by show_quiet_logs once every stage has run).
run_stage() {
  local name="$1" show="$2" start=$SECONDS rc result cpu log="$STAGE_LOGS/$1.log"
  # set -e is ignored inside a subshell run as a condition, so switch it off around the call.
  set +e
  if [[ $show == live ]]; then
    log "stage $name"
    stage_body "$name" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  else
    stage_body "$name" >"$log" 2>&1
    rc=$?
  fi
  set -e
  cpu="$(stage_cpu_seconds "$name")"
  case $rc in
    0) result=passed ;;
    "$SKIPPED") result=skipped ;;
    *) result="failed (exit $rc)" ;;
  esac
  printf '%s\t%s\t%s\n' "$result" "$((SECONDS - start))" "$cpu" >"$STAGE_LOGS/$name.result"
  [[ $show == quiet ]] || echo "--- stage $name: $result in $((SECONDS - start))s (CPU ${cpu}s)"
}

# Sets STAGE_RESULT, STAGE_SECONDS and STAGE_CPU from the stage's .result file.
read_stage_result() {
  if [[ -e $STAGE_LOGS/$1.result ]]; then
    IFS=$'\t' read -r STAGE_RESULT STAGE_SECONDS STAGE_CPU <"$STAGE_LOGS/$1.result"
  else
    STAGE_RESULT="failed (did not finish)" STAGE_SECONDS=- STAGE_CPU=-
  fi
}

# <pid>: ends the process and every process under it.
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

# <stage...>: the logs of stages run quietly, each under the line a live stage ends with.
show_quiet_logs() {
  local name
  for name in "$@"; do
    read_stage_result "$name"
    log "stage $name (ran beside the real stages)"
    cat "$STAGE_LOGS/$name.log"
    echo "--- stage $name: $STAGE_RESULT in ${STAGE_SECONDS}s (CPU ${STAGE_CPU}s)"
  done
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

# The lines of a failed stage's log that say what failed (pytest's, Ansible's, ansible-test's),
# colours removed and each line cut short: CI keeps only the end of a run's output, where the
# summary is, far below the failure itself.
failure_lines() {
  sed 's/\x1b\[[0-9;]*m//g' "$STAGE_LOGS/$1.log" \
    | grep -E '^(FAILED |ERROR: |E  )|fatal: \[|failed: \[|FAILED!|Assertion failed|"msg": ' \
    | cut -c1-600 | tail -n 25 | sed 's/^/    /'
}

main() {
  local name passed=0 failed=0 real=() beside=() beside_lane
  select_stages "$@"
  rm -rf "$STAGE_LOGS"
  mkdir -p "$STAGE_LOGS"
  run_stage setup live
  # Later stages need the virtualenv that setup made, on PATH in this shell too.
  activate_venv
  expand_stages
  for name in "${STAGES[@]}"; do
    if [[ " ${REAL_STAGES[*]} " == *" ${name%@*} "* ]]; then real+=("$name"); else beside+=("$name"); fi
  done
  # Two lanes: the real stages one after another, live; the others meanwhile, quietly.
  (for name in "${beside[@]}"; do run_stage "$name" quiet; done) &
  beside_lane=$!
  # Interrupted, the test command takes the other lane down with it.
  trap 'kill_tree "$beside_lane"; exit 130' INT TERM
  for name in "${real[@]}"; do
    run_stage "$name" live
  done
  wait "$beside_lane" || true
  trap - INT TERM
  show_quiet_logs "${beside[@]}"
  log "summary"
  for name in setup "${STAGES[@]}"; do
    read_stage_result "$name"
    printf '%-20s %-18s %5ss  CPU %5ss\n' "$name" "$STAGE_RESULT" "$STAGE_SECONDS" "$STAGE_CPU"
    if [[ $STAGE_RESULT == failed* ]]; then
      failure_lines "$name"
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
  done
  echo "stages: $passed passed, $failed failed"
  ((failed == 0))
}

main "$@"
