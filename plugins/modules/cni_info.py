#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_info
short_description: Facts about CNI plugins, networks, attachments, network namespaces and routed networks
version_added: 0.1.0
description:
  - Reports what the host holds, without changing anything the host or its runtimes use. The one thing it writes
    is its own verdict of each network it validated without error, kept in C(<cache_dir>/cnikit-verdicts/) as
    M(cnikit.cni.cni_network) keeps its own, so that a later run reuses it while nothing it rests on has changed
    (not in check mode, and only where O(cache_dir) already exists).
  - Plugins are the executables along O(cni_path), in search order, with the CNI versions they answer to
    C(VERSION) and the release version a M(cnikit.cni.cni_plugin_install) manifest records for them.
  - Networks are the files of O(conf_dir) in libcni's order, each validated against the installed plugins and
    the other networks, with each plugin's C(STATUS) for networks of cniVersion 1.1.0 and later.
  - Attachments are the entries of the result cache in O(cache_dir), with their addresses and whether their
    namespace still exists (one that does not is what M(cnikit.cni.cni_gc) collects).
  - Namespaces are the named network namespaces, C(/var/run/netns/<name>).
  - Clusters are the host's records of the routed networks it is a member of, which
    M(cnikit.cni.cni_cluster_member) keeps in C(<cache_dir>/cnikit-cluster/).
  - Files that cannot be read (a broken manifest, an unusable cache entry, a damaged cluster record) are reported
    as warnings.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - jsonschema 3.2.0 or later, when O(gather) holds V(networks).
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._attributes.info_module
  - cnikit.cni._paths.cni_path
  - cnikit.cni._paths.conf_dir
  - cnikit.cni._paths.cache_dir
  - cnikit.cni._paths.timeout
options:
  gather:
    description:
      - What to report. Plugins and networks run the plugin binaries (C(VERSION), C(STATUS)); attachments,
        namespaces and clusters only read files.
      - V(clusters) was added in version 1.1.0.
    type: list
    elements: str
    choices: [plugins, networks, attachments, namespaces, clusters]
    default: [plugins, networks, attachments, namespaces, clusters]
seealso:
  - module: cnikit.cni.cni_gc
  - module: cnikit.cni.cni_netns
  - module: cnikit.cni.cni_cluster_member
  - ref: ansible_collections.cnikit.cni.docsite.namespaces-gc-info
    description: How the three modules fit together.
"""

EXAMPLES = r"""
---
- name: Gather everything
  cnikit.cni.cni_info:
    cni_path: [/usr/lib/cni]
  register: cni

- name: List the attachments whose namespace is gone
  ansible.builtin.debug:
    msg: "{{ cni.attachments | rejectattr('netns_exists') | map(attribute='container_id') }}"

- name: This host's subnet of the routed network cluster
  cnikit.cni.cni_info:
    gather: [clusters]
  register: member

- name: Show it
  ansible.builtin.debug:
    msg: "{{ member.clusters.cluster.subnet | default('not a member') }}"

- name: Fail on any network that does not validate
  ansible.builtin.assert:
    that: cni.networks | rejectattr('valid') | length == 0
"""

RETURN = r"""
plugins:
  description:
    - Each executable along O(cni_path), in search order.
    - C(cni_versions) is its C(VERSION) answer, null with C(error) when that failed.
    - C(set) is the plugin set of M(cnikit.cni.cni_plugin_install) the directory's C(.cnikit-manifest.json) lists
      it in (V(reference) for the reference plugins' release, V(flannel), ...), null for a file no set lists
      (another installer's).
    - C(manifest_version) is the version the manifest records for that set (a release version such as V(1.9.1)
      for the set V(reference), the set's own version string for another set), null for a file no set lists.
    - C(release) is the release of the reference plugins the binary is, the one validation goes by (in C(networks)
      and M(cnikit.cni.cni_network)). It is the version the manifest records for the set V(reference) when that
      is a release version (not a source's content digest C(sha256:<hex>)), else, for a binary in
      C(/usr/lib/cni), the version of Debian's C(containernetworking-plugins) package (V(1.1.1) for
      V(1.1.1+ds1-3+b5)); null when neither says (a binary of another set, another installer's).
    - C(shadowed) is true when a directory earlier in O(cni_path) has a plugin of the same name, which is the
      one used.
  returned: when V(plugins) is in O(gather)
  type: list
  elements: dict
  sample:
    - name: bridge
      path: /opt/cni/bin/bridge
      cni_versions: ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]
      set: reference
      manifest_version: 1.9.1
      release: 1.9.1
      shadowed: false
      error: null
dhcp_daemon:
  description:
    - Whether the C(dhcp) IPAM plugin's daemon is up on its default socket C(/run/cni/dhcp.sock), the socket of
      the reference plugins' C(cni-dhcp.socket) unit.
    - C(present) is true when the socket exists, C(accepting) when it takes a connection. A socket that exists
      but does not accept was left by a daemon that has stopped.
    - Networks whose C(ipam) names another C(daemonSocketPath) are checked against that socket by their
      validation (a warning in C(networks[].warnings)).
  returned: when V(plugins) is in O(gather)
  type: dict
  sample: {socket: /run/cni/dhcp.sock, present: true, accepting: true}
networks:
  description:
    - Each file of O(conf_dir), in libcni's order, with the network it declares.
    - C(cni_version) is the version the list runs at. For a list with C(cniVersions) that is the highest of
      C(cniVersions) and C(cniVersion) that every installed plugin of the list supports (libcni's pick, the
      highest up to 1.1.0, when none is), not the C(cniVersion) as written, which may be absent.
    - C(valid) is false when C(errors) is not empty; C(errors) and C(warnings) hold the validation findings, each
      with a JSON C(path), a C(message) and the offending C(value). A file that cannot be loaded has C(name) null.
    - C(status) lists each plugin's C(STATUS) (C(plugin), C(ready), C(state) V(ready), V(not ready),
      V(degraded) or V(error), C(code), C(msg)); null for networks of a cniVersion before 1.1.0.
  returned: when V(networks) is in O(gather)
  type: list
  elements: dict
  sample:
    - name: demo
      file: /etc/cni/net.d/10-demo.conflist
      cni_version: 1.0.0
      plugins: [bridge, portmap]
      disable_check: false
      disable_gc: false
      valid: true
      errors: []
      warnings: []
      status: null
attachments:
  description:
    - Each attachment in the result cache, with C(network), C(container_id), C(ifname), C(netns), C(ips),
      C(mac), C(netns_exists), C(managed) and C(cache_file).
    - C(managed) is false for an attachment another runtime (podman, containerd, CRI-O) cached in the shared
      O(cache_dir); this collection's GC never collects those.
    - C(netns) is the cached namespace path or, where the entry has none (libcni before 1.2 caches none), the
      C(sandbox) of the result's interface. C(netns_exists) is null when neither names a namespace.
    - An ADD of M(cnikit.cni.cni_attach) that neither finished nor was rolled back (its run was stopped, or the
      rollback's DEL failed) is not an attachment; a warning names its intent marker in C(cnikit-pending/) under
      O(cache_dir), until the next M(cnikit.cni.cni_attach) of it deletes what it left.
  returned: when V(attachments) is in O(gather)
  type: list
  elements: dict
  sample:
    - network: demo
      container_id: cnitool-77383ca0a0715733ca6f
      ifname: eth0
      netns: /var/run/netns/web1
      ips: [10.22.0.5/16]
      mac: "86:55:0a:16:00:05"
      netns_exists: true
      managed: true
      cache_file: /var/lib/cni/results/demo-cnitool-77383ca0a0715733ca6f-eth0
namespaces:
  description: Each named network namespace, with C(name) and C(path).
  returned: when V(namespaces) is in O(gather)
  type: list
  elements: dict
  sample:
    - {name: web1, path: /var/run/netns/web1}
clusters:
  description:
    - The host's record of each routed network it is a member of, by network name, as
      M(cnikit.cni.cni_cluster_member) wrote it, with C(network), C(cidr), C(subnet) (this host's), C(masquerade),
      C(ip_forward_before) (the forwarding sysctl before the first run), C(path) (the record's file) and
      C(error).
    - A dual-stack network's record also has C(cidr_v6), C(subnet_v6) and C(ip6_forward_before) (its IPv6 part,
      since 1.2.0), and C(accept_ra_before) (each interface whose C(accept_ra) the network set to V(2), with its
      value before) where it has one.
    - C(error) is null for a record that was read. For one that cannot be read (not JSON, a field missing or
      of the wrong type) it says why, the other fields but C(network) and C(path) are null, and a warning says
      the same; the task does not fail.
  returned: when V(clusters) is in O(gather)
  type: dict
  version_added: 1.1.0
  sample:
    cluster:
      network: cluster
      cidr: 10.244.0.0/16
      subnet: 10.244.3.0/24
      masquerade: true
      ip_forward_before: 0
      path: /var/lib/cni/cnikit-cluster/cluster.json
      error: null
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _info_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_info_task)


if __name__ == "__main__":
    main()
