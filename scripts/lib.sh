# shellcheck shell=bash
# Shared set-up for scripts/demo.sh, scripts/test.sh and scripts/benchmark.sh.
# Everything here is idempotent: a second call on a prepared machine does almost nothing.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$REPO_ROOT/.build"
VENV="$REPO_ROOT/.venv"
# The working tree, seen by Ansible as cnikit.cni through a symlink (used by molecule and pytest).
INPLACE_COLLECTIONS="$BUILD_DIR/inplace"
# The built tarball, installed the way users install it (used by demo.sh and the build stage).
INSTALLED_COLLECTIONS="$BUILD_DIR/installed"
# Without shellcheck, ansible-test's shellcheck sanity test would have nothing to run. Go and
# Debian's libcni sources build the libcni interoperability test's tool offline. podman, runc and
# busybox-static run the podman interoperability test's containers (from a rootfs, no image). The
# fleet scenario's simulated hosts run sshd and sudo. python3-jsonschema and python3-pyroute2 are
# the distro's way to the modules' libraries: the managed-nodes stage and one fleet host run the
# modules with Debian's own Python 3 and them. dnsmasq-base is the DHCP server the dhcp IPAM tests
# run inside a test namespace.
SYSTEM_PACKAGES=(iproute2 iptables iputils-ping containernetworking-plugins jq shellcheck
  golang-go golang-github-appc-cni-dev podman runc busybox-static
  openssh-server sudo python3-jsonschema python3-pyroute2 dnsmasq-base)

# The tested support matrix (README.md, "Support matrix").
# Controllers: ansible-core line, the controller Python it runs on, and the managed-node libraries
# its unit tests import: floor (the minimums of requirements/managed-node.txt) or newest. The
# development virtualenv (.venv, ansible-core 2.19 on Python 3.11 with the pinned libraries) is the
# fifth row, run by the sanity and units stages.
# shellcheck disable=SC2034  # used by scripts/test.sh
CONTROLLER_ROWS=("2.16 3.10 floor" "2.17 3.12 floor" "2.18 3.13 newest" "2.20 3.12 newest")
# Managed nodes: the Python running the modules and its libraries, driven by the development venv.
# shellcheck disable=SC2034  # used by scripts/test.sh
MANAGED_NODE_ROWS=("3.9 floor" "3.9 newest" "3.13 floor" "3.13 newest")
# Extra virtualenvs (matrix rows, test interpreters): created once, reused while their
# requirements are unchanged.
BUILD_VENVS="$BUILD_DIR/venvs"

log() { printf '\n==> %s\n' "$*"; }

ensure_system_packages() {
  local missing=()
  for pkg in "${SYSTEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "installing system packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

ensure_venv() {
  local stamp="$VENV/.requirements.sha256"
  local want
  want="$(cat "$REPO_ROOT"/requirements/*.txt | sha256sum | cut -d' ' -f1)"
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating virtualenv $VENV"
    python3 -m venv "$VENV"
  fi
  if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    log "installing Python requirements"
    "$VENV/bin/pip" install -q --disable-pip-version-check \
      -r "$REPO_ROOT/requirements/controller.txt" -c "$REPO_ROOT/requirements/constraints.txt" 2>&1 \
      | grep -v "^WARNING: Location 'file://" || true
    "$VENV/bin/python" -c 'import ansible, molecule, pyroute2, jsonschema'
    echo "$want" >"$stamp"
  fi
  activate_venv
}

# molecule (through ansible-compat) finds ansible-config on PATH, so the venv must lead it.
activate_venv() {
  [[ ":$PATH:" == *":$VENV/bin:"* ]] || export PATH="$VENV/bin:$PATH"
  export VIRTUAL_ENV="$VENV"
}

ensure_inplace_collection() {
  mkdir -p "$INPLACE_COLLECTIONS/ansible_collections/cnikit"
  ln -sfn "$REPO_ROOT" "$INPLACE_COLLECTIONS/ansible_collections/cnikit/cni"
}

# ansible-test bootstraps pip into each sanity venv with a script it downloads from a host these
# machines cannot reach; it uses a cached copy when there is one. Ours brings pip from ensurepip.
# The Python given (the development venv's by default) runs the ansible-test in question.
ensure_offline_pip_bootstrap() {
  local python="${1:-$VENV/bin/python}" pip_version
  pip_version="$("$python" "$REPO_ROOT/tests/utils/ansible_test_pip_version.py")"
  local cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
  mkdir -p "$(dirname "$cache")"
  cmp -s "$REPO_ROOT/tests/utils/offline_get_pip.py" "$cache" 2>/dev/null \
    || cp "$REPO_ROOT/tests/utils/offline_get_pip.py" "$cache"
}

# A copy of the working tree at <root>/ansible_collections/cnikit/cni, where ansible-test must
# run (and where ansible-doc finds roles, which it does not through the in-place symlink).
# The root defaults to .build/ansible-test; pass another one to leave that copy alone.
sync_test_tree() {
  local dest="${1:-$BUILD_DIR/ansible-test}/ansible_collections/cnikit/cni"
  rm -rf "$dest"
  mkdir -p "$dest"
  # Files deleted from the working tree are still listed by git; tar skips them.
  (cd "$REPO_ROOT" && git ls-files -co --exclude-standard -z \
    | xargs -0 tar --ignore-failed-read -cf - 2>/dev/null) | tar -xf - -C "$dest"
  # ansible-test lists its targets with git from the nearest repository upwards; without one of
  # its own the copy would be seen as ignored files of the outer checkout and every test skipped.
  git -C "$dest" init -q
  echo "$dest"
}

# Build the collection tarball into .build/dist and install it into .build/installed, as a user
# would; prints the tarball's path.
build_and_install_collection() {
  local dist="$BUILD_DIR/dist"
  rm -rf "$dist" "$INSTALLED_COLLECTIONS"
  ansible-galaxy collection build "$REPO_ROOT" --output-path "$dist" >&2
  local tarball
  tarball="$(echo "$dist"/cnikit-cni-*.tar.gz)"
  ansible-galaxy collection install "$tarball" -p "$INSTALLED_COLLECTIONS" >&2
  echo "$tarball"
}

# The CPython <major.minor> given, from pyenv's versions or the system's; fails when there is none.
find_python() {
  local candidate
  for candidate in $(printf '%s\n' "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/python"$1" | sort -Vr) \
      "/usr/bin/python$1"; do
    [[ -x $candidate ]] && { echo "$candidate"; return 0; }
  done
  return 1
}

# pip requirement lines for the managed-node libraries: "floor" pins the minimums of
# requirements/managed-node.txt (markers kept: the floor of pyroute2 depends on the Python),
# "newest" leaves the versions open.
managed_node_requirements() {
  local file="$REPO_ROOT/requirements/managed-node.txt"
  case $1 in
    floor) grep -v '^#' "$file" | sed 's/>=/==/' ;;
    newest) grep -v '^#' "$file" | sed 's/>=[^;]*//' ;;
    *) echo "unknown library set: $1" >&2; return 1 ;;
  esac
}

# A virtualenv at .build/venvs/<name> made by <python> holding the requirement lines read from
# stdin; rebuilt only when the interpreter or the lines change. Prints its directory.
ensure_build_venv() {
  local python="$2" dir="$BUILD_VENVS/$1" requirements want
  requirements="$(cat)"
  want="$(printf '%s\n%s\n' "$("$python" -VV)" "$requirements" | sha256sum | cut -d' ' -f1)"
  if [[ "$(cat "$dir/.requirements.sha256" 2>/dev/null)" != "$want" ]]; then
    log "creating virtualenv $dir ($("$python" -V))" >&2
    rm -rf "$dir"
    "$python" -m venv "$dir"
    echo "$requirements" >"$dir/requirements.txt"
    "$dir/bin/pip" install -q --disable-pip-version-check -r "$dir/requirements.txt" 2>&1 \
      | grep -v "^WARNING: Location 'file://" >&2 || true
    "$dir/bin/pip" check >&2
    echo "$want" >"$dir/.requirements.sha256"
  fi
  echo "$dir"
}

setup_all() {
  ensure_system_packages
  ensure_venv
  ensure_inplace_collection
}
