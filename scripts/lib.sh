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
# fleet scenario's simulated hosts run sshd and sudo, and one runs Debian's Python with Debian's
# jsonschema and pyroute2.
SYSTEM_PACKAGES=(iproute2 iptables iputils-ping containernetworking-plugins jq shellcheck
  golang-go golang-github-appc-cni-dev podman runc busybox-static
  openssh-server sudo python3-jsonschema python3-pyroute2)

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
ensure_offline_pip_bootstrap() {
  local pip_version
  pip_version="$("$VENV/bin/python" "$REPO_ROOT/tests/utils/ansible_test_pip_version.py")"
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

setup_all() {
  ensure_system_packages
  ensure_venv
  ensure_inplace_collection
}
