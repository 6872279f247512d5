#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_network
short_description: Declare a CNI network as a validated conflist file
version_added: 0.1.0
description:
  - Writes the network configuration list (conflist) of one CNI network into O(conf_dir), or removes it.
  - Before anything is written the list is validated in three layers, each finding naming its JSON path and
    the offending value. The envelope follows the CNI spec and libcni; every reference plugin and IPAM type
    is checked against a schema of its own rules (VLAN ranges, mutually exclusive options, host-local
    subnets and ranges, integers that must be integers, interface names of at most 15 bytes, ...); the
    network is checked against the other networks in O(conf_dir) (same name in another file, overlapping
    host-local subnets, one bridge with different subnets).
  - With O(check_plugins=true) every plugin C(type) and C(ipam.type) must be an executable in O(cni_path)
    whose VERSION answer supports the list's C(cniVersion).
  - The file is rewritten only when its content changes in meaning (formatting aside), atomically. Its mode,
    owner, group, SELinux context and attributes are set as for M(ansible.builtin.file), without a rewrite when
    only they differ.
  - See R(Conflist validation, ansible_collections.cnikit.cni.docsite.validation) for every check and its messages.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - jsonschema 3.2.0 or later, unless O(validate=none) or O(state=absent).
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._paths.cni_path
  - cnikit.cni._paths.conf_dir
  - cnikit.cni._paths.cache_dir
  - cnikit.cni._paths.timeout
  - ansible.builtin.files
attributes:
  check_mode:
    support: full
    details:
      - Validates and reports what would be written or removed, touching nothing.
      - With O(check_plugins=true), plugin binaries missing from O(cni_path) are taken for ones an earlier task
        of the run would install; the task warns and does not check the binaries, instead of failing.
      - A conflist that would be written is recorded as the host fact C(cnikit_cni_planned_network_<name>), so that a
        later M(cnikit.cni.cni_attach) task of the same check-mode run predicts against it.
  diff_mode:
    support: full
    details:
      - The file's text before and after (for O(state=absent), one entry per removed file).
      - When its mode, owner, group, SELinux context or attributes change, an entry of their values before and
        after; with a content change too, the diff is a list of both entries.
  idempotent:
    support: full
options:
  name:
    description:
      - The network's name (C(name) in the conflist). It must start with a letter or digit and contain only
        letters, digits, C(_), C(.) and C(-).
    type: str
    required: true
  state:
    description:
      - With V(absent), the file this task would write is removed, and every other file in O(conf_dir) that
        declares a network of this name, so that no runtime loads it any more.
      - Attachments of the network still cached in O(cache_dir) whose namespaces are there (of any runtime) keep
        their network, but nothing can check, repair or, by the configuration, detach them once the file is gone,
        so the task warns, naming them (and still removes the file). Detach them first with
        M(cnikit.cni.cni_attach) O(cnikit.cni.cni_attach#module:state=absent).
    type: str
    choices: [present, absent]
    default: present
  plugins:
    description:
      - The network's plugin objects, in chain order, each with at least C(type).
      - Exactly one of O(plugins) and O(config) is required with O(state=present).
      - Where a reference plugin's key takes an integer, a number or a boolean, a string spelling it (V("9000"),
        V("true"), V("yes")) is converted as Ansible converts module options, and written converted (shown by
        C(--diff)); ansible-core before 2.19 passes templated numbers in this list as strings. Any other value
        is left for validation to report.
    type: list
    elements: dict
  config:
    description:
      - A whole conflist, as a mapping or as JSON text (duplicate keys in the text are reported).
      - Strings spelling an integer, a number or a boolean are converted as in O(plugins).
      - Its C(name) must be O(name) or absent. The envelope options given here (O(cni_version),
        O(cni_versions), O(disable_check), O(disable_gc), O(load_only_inlined_plugins)) override its keys.
      - A single-plugin network (a C(.conf) file's content, with a plugin C(type) and no C(plugins)) is written as the
        one-plugin list libcni loads it as (libcni's C(ConfListFromConf)) and validated as that list; the list takes
        its C(name) and C(cniVersion), and its plugin is the whole C(.conf), those two included (set to the list's
        when O(cni_version) is given), as runtimes cache it, so the attachments made from the C(.conf) stay as
        they are. The task warns, returns RV(converted_from_conf=true), and the diff's header says so.
    type: raw
  cni_version:
    description:
      - The list's C(cniVersion). Defaults to V(1.0.0) when the list is built from O(plugins); with O(config),
        the config's own value is kept unless this is set.
      - Debian 11's plugins (0.9.0) accept at most V(0.4.0), Debian 12's and 13's (1.1.1) at most V(1.0.0); releases
        from v1.6.0 on accept V(1.1.0).
    type: str
  cni_versions:
    description:
      - The list's C(cniVersions) (spec 1.1.0) the runtime chooses from, together with O(cni_version).
    type: list
    elements: str
  disable_check:
    description: The list's C(disableCheck); not written when unset.
    type: bool
  disable_gc:
    description: The list's C(disableGC); not written when unset.
    type: bool
  load_only_inlined_plugins:
    description: The list's C(loadOnlyInlinedPlugins); not written when unset.
    type: bool
  priority:
    description:
      - The file name's prefix. Runtimes read the conflists of O(conf_dir) in lexical order and the first file
        of a name wins, so a lower priority comes first.
      - The file is C(<conf_dir>/<priority as two digits>-<name>.conflist), for example C(10-web.conflist).
    type: int
    default: 10
  filename:
    description:
      - The file name in O(conf_dir), overriding O(priority). It must end in C(.conflist).
      - It follows the rule of network names, starting with a letter or digit and holding only letters, digits,
        C(_), C(.) and C(-), at most 255 bytes.
    type: str
  mode:
    description:
      - The file's permissions, as an octal string such as V('0644') (quote it in YAML) or a number.
      - Symbolic modes such as V(u=rw,g=r) are not accepted, nor are the setuid, setgid and sticky bits.
      - A mode that lets group or others write the file (such as V('0664') or V('0666')) gets a warning, since
        whoever can write a conflist chooses the plugin binaries root runs.
    type: raw
    default: '0644'
  owner:
    description:
      - The file's owner, a name or a number. Unset, a file written anew belongs to the writing user and an
        unchanged file keeps its owner.
    type: str
  group:
    description: The file's group, a name or a number; unset as for O(owner).
    type: str
  validate:
    description:
      - V(strict) fails the task on any error, before anything is written.
      - V(warn) reports errors in RV(validation_errors) and as warnings, and writes anyway.
      - V(none) skips validation (the name and file name are still checked).
      - Warnings (unknown keys, keys in the wrong case, third-party plugins, ...) never fail the task; they are
        returned in RV(validation_warnings).
    type: str
    choices: [strict, warn, none]
    default: strict
  check_plugins:
    description:
      - Whether every C(type) and C(ipam.type) must resolve to an executable in O(cni_path) that supports the
        list's C(cniVersion) (asked with C(CNI_COMMAND=VERSION)).
      - Set V(false) to validate on a machine without the plugins, such as the controller.
    type: bool
    default: true
  validate_only:
    description:
      - Validate and return the normalised config without reading or writing the file. The other networks of
        O(conf_dir), when it exists, still take part in the checks.
      - "Works on the controller with C(delegate_to: localhost) and O(check_plugins=false), for linting in CI."
    type: bool
    default: false
  backup:
    description: Keep a timestamped copy of the file it replaces or removes.
    type: bool
    default: false
notes:
  - Unknown plugin types (flannel, calico, multus, ...) get the envelope checks and a warning.
  - O(timeout) bounds each VERSION probe of a plugin binary.
  - A run reuses the verdict of the last validation of the same declared configuration when nothing
    else it rests on has changed (the other files of O(conf_dir), the plugin binaries, the host state
    the checks read); verdicts are kept in C(<cache_dir>/cnikit-verdicts/).
seealso:
  - ref: ansible_collections.cnikit.cni.docsite.validation
    description: What each validation layer checks, with example messages.
  - name: CNI specification, network configuration lists
    description: The format this module writes.
    link: https://www.cni.dev/docs/spec/#configuration-format
"""

EXAMPLES = r"""
---
- name: A bridge network with NAT and port mappings, loaded before the distribution's defaults
  cnikit.cni.cni_network:
    name: web
    priority: 5
    cni_path: [/usr/lib/cni]
    plugins:
      - type: bridge
        bridge: cni-web0
        isGateway: true
        ipMasq: true
        ipam:
          type: host-local
          ranges: [[{subnet: 10.77.0.0/24}]]
          routes: [{dst: 0.0.0.0/0}]
      - type: portmap
        capabilities: {portMappings: true}

- name: Install a conflist shipped as a file, keeping a backup of the previous version
  cnikit.cni.cni_network:
    name: podman
    filename: 87-podman-bridge.conflist
    config: "{{ lookup('ansible.builtin.file', 'files/87-podman-bridge.conflist') }}"
    backup: true

- name: Lint a conflist on the controller without writing anything
  cnikit.cni.cni_network:
    name: web
    config: "{{ lookup('ansible.builtin.file', 'conflists/web.conflist') }}"
    validate_only: true
    check_plugins: false
  delegate_to: localhost

- name: Remove the network
  cnikit.cni.cni_network:
    name: web
    state: absent
"""

RETURN = r"""
ansible_facts:
  description:
    - In check mode, the conflist that would be written, for M(cnikit.cni.cni_attach)'s prediction.
    - One fact named after the network, C(cnikit_cni_planned_network_<name>) (a key that depends on O(name), so it
      is described here rather than listed), holding C(conf_dir) and C(config), the conflist as it would be
      written.
  returned: in check mode, when the file would be rewritten
  type: dict
  sample:
    cnikit_cni_planned_network_web:
      conf_dir: /etc/cni/net.d
      config:
        cniVersion: 1.0.0
        name: web
        plugins:
          - type: loopback
path:
  description: The file the network is written to (or, with O(state=absent), would be).
  returned: always
  type: str
  sample: /etc/cni/net.d/10-web.conflist
config:
  description: The normalised conflist, as written (envelope keys first, plugins as given).
  returned: when O(state=present)
  type: dict
  sample:
    cniVersion: 1.0.0
    name: web
    plugins:
      - type: loopback
converted_from_conf:
  description: Whether O(config) was a single-plugin network (a C(.conf)), written as a one-plugin list.
  returned: when O(state=present)
  type: bool
  sample: false
  version_added: 1.1.0
validation_errors:
  description:
    - Errors found by validation, each with C(path) (a JSON path such as C(plugins[0].ipam.ranges[0][0].subnet)),
      C(message) and, where there is one, the offending C(value).
    - Non-empty only with O(validate=warn); with V(strict) the task fails with the same list.
  returned: always
  type: list
  elements: dict
  sample:
    - path: plugins[0].vlan
      message: must be at most 4094
      value: 5000
validation_warnings:
  description:
    - Findings that do not fail the task (unknown keys with suggestions, keys in the wrong case, ...).
    - Each is also shown as a warning, except, when the file is left as it is, the findings of the configuration
      alone, which were shown when the file was written (findings about the host, its plugin binaries and the other
      files of O(conf_dir), are shown on every run).
  returned: always
  type: list
  elements: dict
  sample:
    - path: plugins[0].isgateway
      message: the bridge plugin reads this key as 'isGateway' (Go matches keys case-insensitively); write 'isGateway'
removed:
  description: The files removed (in check mode, that would be) with O(state=absent).
  returned: when O(state=absent)
  type: list
  elements: str
  sample: [/etc/cni/net.d/10-web.conflist]
backup_file:
  description: The copy of the replaced file, with O(backup=true).
  returned: when O(state=present) and a backup was made
  type: str
  sample: /etc/cni/net.d/10-web.conflist.12345.2026-11-21@09:00:00~
backup_files:
  description: The copies of the removed files, with O(backup=true).
  returned: when O(state=absent) and a backup was made
  type: list
  elements: str
  sample: [/etc/cni/net.d/10-web.conflist.12345.2026-11-21@09:00:00~]
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _network_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_network_task)


if __name__ == "__main__":
    main()
