#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_gc
short_description: Garbage-collect stale CNI attachments
version_added: 0.1.0
description:
  - Releases what attachments that no longer exist still hold, as a container runtime does with libcni's GC.
    Every cached attachment of the network that is not valid is DELeted (its IP reservation returns to the
    pool, its host-side veth and port mappings go away, its cache entry is removed), then plugins of
    cniVersion 1.1.0 and later are sent C(GC) with the valid attachments, as the spec asks. Those DELs are what
    frees addresses, since no reference plugin up to v1.9.1 does anything on C(GC).
  - The valid attachments are O(valid_attachments) when given; by default, every cached attachment whose
    namespace still exists. An attachment whose namespace was deleted without a DEL is therefore collected.
  - Only attachments this collection made are ever collected. Another runtime sharing O(cache_dir) (podman,
    containerd, CRI-O through libcni) collects its own, so its attachments are left alone in every mode, listed in
    RV(left_alone), and sent to the plugins' C(GC) as valid. A namespace counts as gone only when the path its
    attachment names is gone; libcni before 1.2 caches no C(netns), and the path is then read from the result's
    C(sandbox). Detach another runtime's attachment by naming it, with M(cnikit.cni.cni_attach) O(cnikit.cni.cni_attach#module:state=absent).
  - The valid set is judged while the network is locked against ADD and DEL by this collection, so an
    attachment being added at the same time is never collected.
  - A network with C(disableGC) is skipped.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._paths.cni_path
  - cnikit.cni._paths.conf_dir
  - cnikit.cni._paths.cache_dir
  - cnikit.cni._paths.timeout
attributes:
  check_mode:
    support: full
    details:
      - Lists in RV(collected) what would be collected; runs neither DEL nor GC.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  network:
    description:
      - Name of the network to collect, loaded from O(conf_dir) in libcni's order (the first file that declares it
        wins).
      - When omitted, every network of O(conf_dir) is collected (files that cannot be loaded are reported as
        warnings), and so is every network that no file of O(conf_dir) declares any more but that still has
        attachments this collection made (RV(orphaned_networks)). Of those, the attachments whose namespace is gone are DELeted with
        the configuration cached at their ADD, unless O(valid_attachments) lists them or that configuration sets
        C(disableGC); no C(GC) is sent to their plugins. O(valid_attachments) does not make a live attachment of
        such a network stale, since another runtime sharing O(cache_dir) may own it. A network whose file cannot be
        loaded counts as one O(conf_dir) no longer declares.
    type: str
  valid_attachments:
    description:
      - The attachments to keep, by container ID and interface name. Every other attachment this collection made in
        the network is collected, even when its namespace still exists.
      - A live attachment of another runtime that the list leaves out is not collected; a warning names it.
      - When omitted, the attachments whose namespace still exists are kept.
    type: list
    elements: dict
    suboptions:
      container_id:
        description: The container ID (C(CNI_CONTAINERID)) of the attachment.
        type: str
        required: true
      ifname:
        description: The interface name (C(CNI_IFNAME)) of the attachment.
        type: str
        default: eth0
seealso:
  - module: cnikit.cni.cni_netns
  - module: cnikit.cni.cni_info
  - ref: ansible_collections.cnikit.cni.docsite.namespaces-gc-info
    description: How the three modules fit together.
"""

EXAMPLES = r"""
---
- name: Collect, in every network, the attachments whose namespace is gone
  cnikit.cni.cni_gc:
    cni_path: [/usr/lib/cni]
  register: gc

- name: Keep exactly these attachments of the network "demo", collect the rest
  cnikit.cni.cni_gc:
    network: demo
    valid_attachments:
      - container_id: web1
      - container_id: web2
        ifname: net1
"""

RETURN = r"""
collected:
  description:
    - The attachments that were DELeted (in check mode, would be), each with C(network), C(container_id),
      C(ifname), C(netns) and C(managed) (always true).
  returned: always
  type: list
  elements: dict
  sample:
    - {network: demo, container_id: cnitool-77383ca0a0715733ca6f, ifname: eth0, netns: /var/run/netns/web1,
       managed: true}
errors:
  description:
    - DELs and GCs that failed, each with C(network), C(msg) and the failing plugin's details. The task fails when
      there are any; what could be collected is collected nevertheless.
  returned: always
  type: list
  elements: dict
orphaned_networks:
  description:
    - Names of the networks collected from their cache entries alone, because no file of O(conf_dir) declares them
      any more. Only when O(network) is omitted.
    - Only networks with attachments this collection made. A network that only other runtimes cached (such as
      containerd's built-in C(cni-loopback), which no file ever declares) is theirs, is never collected from, and
      is not listed here nor in RV(left_alone); M(cnikit.cni.cni_info) lists its attachments.
  returned: always
  type: list
  elements: str
  sample: [retired]
left_alone:
  description:
    - The attachments of the networks examined that another runtime made, which GC never collects, each with
      C(network), C(container_id), C(ifname), C(netns) and C(netns_exists) (null when the cache entry names no
      namespace).
  returned: always
  type: list
  elements: dict
  sample:
    - {network: podman, container_id: 4f1c0e..., ifname: eth0, netns: /run/netns/netns-5d7e, netns_exists: true,
       managed: false}
unusable_entries:
  description:
    - The cache files of the networks examined that cannot be read (empty, or cut short when a runtime crashed
      while writing them), each with C(network), C(file), C(reason) and C(keys), the C(container_id) and C(ifname)
      pairs its file name C(<network>-<container ID>-<ifname>) can stand for (both may hold C(-), so there may
      be several).
    - They may belong to running containers, so GC never collects them, and lists their keys as valid in the
      C(GC) requests sent to the plugins. A warning names each one.
    - Files of the networks in RV(orphaned_networks) and RV(skipped_networks) are listed too (no C(GC) is sent for
      those networks). Without O(network), so is every other unreadable file, with C(network) null and C(keys)
      empty, since its network cannot be told from its name.
  returned: always
  type: list
  elements: dict
  sample:
    - {network: podman, file: /var/lib/cni/results/podman-4f1c0e-eth0, reason: the file is empty,
       keys: [{container_id: 4f1c0e, ifname: eth0}]}
skipped_networks:
  description:
    - Names of the networks skipped because they set C(disableGC).
    - Not called C(skipped), which Ansible would take for the task's own skipped status.
  returned: always
  type: list
  elements: str
  sample: [legacy]
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _gc_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_gc_task)


if __name__ == "__main__":
    main()
