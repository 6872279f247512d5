#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_plugin_install
short_description: Install, upgrade and remove CNI plugin binaries
version_added: 0.1.0
author: cnikit maintainers (@cnikit)
description:
  - Installs the CNI reference plugins (C(bridge), C(host-local), ...) into O(dest) from the upstream
    release, a mirror with the same layout, a tarball already on the managed host, or a directory of
    binaries such as a distro package's C(/usr/lib/cni).
  - Installs third-party plugins beside them as another plugin set (O(plugin_set)), such as flannel from its
    release tarball, whose C(flannel-<arch>) is installed as C(flannel) (O(rename)).
  - A manifest, C(<dest>/.cnikit-manifest.json), records each set's version, source, tarball digests and
    each installed file's sha256. A re-run with nothing changed downloads nothing and reports no change;
    a modified, missing or re-permissioned binary is detected and repaired.
  - A run installs, upgrades or removes one set and never touches the binaries of another set, nor files no
    set installed (those are reported in RV(foreign)). A binary name that another set installed is an error.
  - A file in O(dest) that no set installed (another installer's, one copied by hand) and that the set would
    install a binary of the same name over is an error naming it, and nothing changes, unless O(adopt_foreign)
    names it.
  - The set V(reference), the default, is the reference plugins' release, which validation and
    M(cnikit.cni.cni_info) take its version for. It takes only release versions, only binaries the collection
    knows as reference plugins, and, without O(plugins) or a release O(version), no source that lacks reference
    plugins the set holds; anything else goes into a set of its own (O(plugin_set)).
  - A manifest written before plugin sets existed is the set V(reference); the first run rewrites it in the
    current format (and reports a change).
  - A new version is staged in a temporary directory inside O(dest); every binary must answer the CNI
    C(VERSION) command before the first one replaces its predecessor. Binaries of the set that the new version
    no longer has are removed. Files the module did not install are never removed.
  - Release extras (C(LICENSE), C(README.md)) are not put into O(dest).
  - A tarball member with an absolute path, C(..), a link, a device or fifo, the setuid or setgid bit, or a
    size over 256 MiB (1 GiB in all, 512 MiB packed) fails the task before anything in O(dest) changes, as
    does a checksum mismatch.
  - Binaries end up mode 0755, owned by root when the module runs as root.
requirements:
  - Python 3.9 or later on the managed node.
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._paths.conf_dir_unused
  - cnikit.cni._paths.cache_dir_unused
attributes:
  check_mode:
    support: full
    details:
      - When the manifest does not prove O(dest) current, check mode downloads the tarball into a temporary
        directory outside O(dest) to compute the exact lists of files; RV(downloaded) says so.
  diff_mode:
    support: full
    details:
      - Every set's version, source and file list in the manifest, before and after.
  idempotent:
    support: full
options:
  state:
    description:
      - V(present) installs the selected plugins of the set and removes the ones the set held before that are
        no longer selected.
      - V(absent) removes the plugins of the set (all of them, or those in O(plugins)) and, when no set
        remains, the manifest.
      - Either way a listed file whose content changed since it was installed is left in place and reported in
        RV(modified), never removed.
    type: str
    choices: [present, absent]
    default: present
  plugin_set:
    description:
      - The set of plugins this task manages in O(dest). Each set has its own source, version and binaries;
        installing, upgrading or removing one leaves the others alone.
      - V(reference) is the CNI reference plugins' release. Name a set after what it holds, for example
        V(flannel) or V(whereabouts) (lower-case letters, digits, C(.), C(_), C(-)).
      - The set V(reference) holds only the reference plugins (C(bandwidth), C(bridge), ..., C(vrf)); a source
        holding anything else is an error naming O(plugin_set). So is a source lacking reference plugins the set
        holds now, which installing it would remove, unless O(plugins) names what the set keeps or O(version) is
        the release the source is.
      - A set other than V(reference) needs O(url), O(src) or O(src_dir), since O(base_url) has the reference
        release's layout.
    type: str
    default: reference
    version_added: 1.1.0
  rename:
    description:
      - "Source members to install under another name, as a mapping of member to name; for example
        V({flannel-amd64: flannel}) for flannel's release tarball. Members not listed keep their names."
      - O(plugins) selects by the installed name.
      - A member the source does not hold, or two members given one name, is an error.
    type: dict
    version_added: 1.1.0
  version:
    description:
      - For the set V(reference), the release version of the reference plugins, C(MAJOR.MINOR.PATCH) with or
        without a leading C(v), for example V(1.9.1) or V(v1.9.1); nothing else (not V(v1.9.1-flannel1), not a
        package's V(1.1.1+ds1), for which give its release, V(1.1.1)).
      - For another set, the version as its project names it, for example V(v1.9.1-flannel1); any label
        without white space at its ends, path separators or control characters.
      - Required to install from the release (O(base_url)) or from O(url).
      - With O(src) or O(src_dir) it is only recorded in the manifest; when omitted there, the manifest
        records the source's content digest (C(sha256:<hex>)) instead.
    type: str
  arch:
    description:
      - Release architecture in the tarball name.
      - Defaults to the managed host's machine type (C(x86_64) -> V(amd64), C(aarch64) -> V(arm64),
        C(armv7l) -> V(arm), ...).
    type: str
    choices: [amd64, arm, arm64, mips64le, ppc64le, riscv64, s390x]
  dest:
    description:
      - Directory the binaries are installed into. Created (mode 0755) when missing.
      - Defaults to the first directory of O(cni_path) (V(/opt/cni/bin) unless set otherwise), which is where a
        runtime given the same O(cni_path) looks first.
    type: path
  cni_path:
    description:
      - The plugin search path of the host's runtime; its first directory is the default O(dest).
    type: list
    elements: path
    default: [/opt/cni/bin]
  base_url:
    description:
      - Base of the release downloads; the tarball is C(<base_url>/v<version>/cni-plugins-linux-<arch>-v<version>.tgz).
      - Set it to use a mirror with the upstream layout. Ignored when O(url), O(src) or O(src_dir) is set.
    type: str
    default: https://github.com/containernetworking/plugins/releases/download
  url:
    description:
      - Full URL of the tarball, for mirrors with another layout.
      - Credentials in the URL are kept out of messages and return values, but prefer O(url_username) and
        O(url_password).
    type: str
  src:
    description:
      - Path of a release tarball already on the managed host.
    type: path
  src_dir:
    description:
      - Directory on the managed host whose executable files are the plugins, for example V(/usr/lib/cni)
        of Debian's C(containernetworking-plugins) package.
    type: path
  checksum:
    description:
      - V(sha256:<hex>) or V(sha512:<hex>) pins the tarball's digest; V(sha256:<url>) or V(sha512:<url>) names a
        checksum file (C(sha256sum) format) to fetch.
      - When omitted for a download, the release's own C(<tarball>.sha256) file is used. That protects against
        corrupted and truncated downloads, not against a compromised release or mirror, which can change both
        files; pin V(sha256:<hex>) for that.
      - A download over plain C(http://) (the tarball or its checksum file) without a pinned digest gets a warning,
        since anyone on the network path could replace the binaries and their checksum together.
      - When omitted for O(src), the tarball is not verified. Not allowed with O(src_dir).
    type: str
  plugins:
    description:
      - Plugin binaries to install, for example V([bridge, host-local, loopback]). Default is every binary the
        source holds.
      - A name the source does not hold is an error.
    type: list
    elements: str
  force:
    description:
      - Fetch the source and rewrite every selected binary even when the manifest shows them current.
    type: bool
    default: false
  adopt_foreign:
    description:
      - Binaries in O(dest) that no set installed (another installer's, ones copied by hand, all of them after the
        manifest was deleted) which this set may take over, by name, for example V([bridge, portmap]).
      - Without it, a set that would install a binary over such a file fails naming the file and the set, and
        changes nothing (check mode predicts the same failure).
      - A file taken over is replaced by the set's binary, listed in RV(adopted) and RV(updated), and is from then
        on the set's own; a later removal of the set, or of that plugin, deletes it.
      - Each name must be a binary the set installs. Names of the set's own binaries change nothing, so the task
        may keep the option once converged. Not used with O(state=absent).
    type: list
    elements: str
    version_added: 1.1.0
  timeout:
    description:
      - Seconds each binary's C(VERSION) call, and each download as a whole (connecting, the headers and every byte;
        the tarball and a checksum file count as one download each), may take. A mirror that keeps sending a byte
        now and then fails the task once the time is up.
    type: float
    default: 60.0
  validate_certs:
    description:
      - Verify the TLS certificates of O(base_url), O(url) and checksum URLs.
    type: bool
    default: true
  use_proxy:
    description:
      - Use the proxy given by the C(https_proxy)/C(http_proxy)/C(no_proxy) environment of the managed host.
    type: bool
    default: true
  url_username:
    description:
      - User name for HTTP basic authentication to the download server.
    type: str
  url_password:
    description:
      - Password for HTTP basic authentication to the download server.
    type: str
  force_basic_auth:
    description:
      - Send the basic authentication header with the first request instead of waiting for a 401.
      - Either way credentials (these options or a user:password in a URL) go only to the server they were given
        for. With O(force_basic_auth=true) the header goes with the first request only and a redirect is
        followed without it, so another server (a CDN, anyone) never receives it; without, credentials answer
        only a 401 challenge of the server they were given for.
    type: bool
    default: false
notes:
  - The manifest is C(<dest>/.cnikit-manifest.json), mode 0644. Removing it makes every binary in O(dest) one no
    set installed; the next run of a set fails naming them until O(adopt_foreign) lists them.
  - Plugins whose VERSION answer fails (wrong architecture, truncated binary) abort the install before any
    binary in O(dest) is replaced.
seealso:
  - ref: ansible_collections.cnikit.cni.docsite.plugin-install
    description: Sources, checksum semantics, manifest, upgrades and check mode.
"""

EXAMPLES = r"""
- name: Install every plugin of release v1.9.1 into /opt/cni/bin
  cnikit.cni.cni_plugin_install:
    version: v1.9.1

- name: Pin the tarball's digest (protects against a compromised release)
  cnikit.cni.cni_plugin_install:
    version: 1.9.1
    arch: amd64
    checksum: sha256:b98f74a0f8522f0a83867178729c1aa70f2158f90c45a2ca8fa791db1c76b303

- name: Install a subset from a mirror with the upstream layout
  cnikit.cni.cni_plugin_install:
    version: 1.9.1
    base_url: https://mirror.example.com/cni-plugins
    plugins: [bridge, host-local, loopback, portmap]

- name: Install the distro package's binaries into /opt/cni/bin
  cnikit.cni.cni_plugin_install:
    src_dir: /usr/lib/cni

- name: Install flannel's CNI plugin beside the reference plugins, as flannel
  cnikit.cni.cni_plugin_install:
    plugin_set: flannel
    version: v1.9.1-flannel1
    url: https://github.com/flannel-io/cni-plugin/releases/download/v1.9.1-flannel1/cni-plugin-flannel-linux-amd64-v1.9.1-flannel1.tgz
    checksum: "sha256:{{ flannel_cni_sha256 }}"  # the tarball's digest, from a source you trust
    rename:
      flannel-amd64: flannel

- name: Take over the bridge and portmap a hand-run install left in /opt/cni/bin (the task fails naming them)
  cnikit.cni.cni_plugin_install:
    version: 1.9.1
    adopt_foreign: [bridge, portmap]

- name: Remove flannel's set, leaving the reference plugins
  cnikit.cni.cni_plugin_install:
    state: absent
    plugin_set: flannel

- name: Remove the reference plugins this module installed
  cnikit.cni.cni_plugin_install:
    state: absent
"""

RETURN = r"""
set:
  description: The plugin set of the run (O(plugin_set)).
  returned: always
  type: str
  sample: reference
version:
  description: Version of the set recorded in the manifest (C(sha256:<hex>) for a source given without O(version)).
  returned: always
  type: str
  sample: 1.9.1
source:
  description: Where the binaries came from; URLs without credentials.
  returned: always
  type: str
  sample: https://github.com/containernetworking/plugins/releases/download/v1.9.1/cni-plugins-linux-amd64-v1.9.1.tgz
dest:
  description: Absolute path of the install directory.
  returned: always
  type: str
  sample: /opt/cni/bin
manifest:
  description: Path of the manifest.
  returned: always
  type: str
  sample: /opt/cni/bin/.cnikit-manifest.json
plugins:
  description:
    - The set's plugins after the run (what they would be, in check mode), by name.
    - C(cni_versions) is the binary's C(VERSION) answer; null in check mode for binaries not yet installed.
  returned: always
  type: dict
  sample:
    bridge:
      path: /opt/cni/bin/bridge
      sha256: 3a1f0c5e...
      cni_versions: ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
installed:
  description: Plugins that were (would be) newly installed.
  returned: always
  type: list
  elements: str
  sample: [bridge, host-local]
updated:
  description: Plugins whose binary was (would be) replaced, by an upgrade, to repair drift, or taken over (RV(adopted)).
  returned: always
  type: list
  elements: str
  sample: [portmap]
removed:
  description: Plugins that were (would be) removed.
  returned: always
  type: list
  elements: str
  sample: [sbr]
adopted:
  description:
    - Files no set installed that O(adopt_foreign) named and the set took (would take) over, replacing each with
      the set's binary; they are also in RV(updated).
  returned: always
  type: list
  elements: str
  sample: [bridge]
modified:
  description:
    - Plugins the manifest lists that were to be removed but whose content changed since they were installed
      (an operator's own build, a file someone else put there). They are left in place, no longer managed, and
      a warning names each.
  returned: always
  type: list
  elements: str
  sample: []
foreign:
  description:
    - Executables in O(dest) that no set of the manifest installed (another installer's binaries, or ones
      reported in RV(modified)), left alone.
  returned: always
  type: list
  elements: str
  sample: [calico, calico-ipam]
downloaded:
  description: Whether the tarball was downloaded (in check mode, into a temporary directory outside O(dest)).
  returned: always
  type: bool
  sample: false
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _plugin_install_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_plugin_install_task)


if __name__ == "__main__":
    main()
