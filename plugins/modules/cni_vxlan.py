#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_vxlan
short_description: Reconcile a VXLAN device without learning, with a static neighbour and FDB entry per peer
version_added: 1.2.0
description:
  - Makes one VXLAN device the flannel way. The device has VNI O(vni) on UDP port O(port), with C(local) O(local)
    over the interface O(dev), learning off, MAC O(mac) and the VTEP address O(vtep) as a C(/32). It is up.
  - For each peer of O(peers), the module adds a permanent neighbour entry (the peer's VTEP address to its MAC)
    and an FDB entry (the peer's MAC to its underlay address). Add a route to the peer's subnet C(via) its VTEP
    address C(dev) the device C(onlink) with cnikit.cni.cni_route.
  - The device is the module's by its name. Every neighbour and FDB entry on it is the module's, and those that
    O(peers) does not list are deleted. A device made with another VNI, port, local address or underlay
    interface is deleted and made again, with its entries. An interface of another kind by that name fails the
    task, and nothing changes.
  - With O(state=absent), the device goes, with its entries and the routes through it.
  - The device lives in the kernel only; it is gone after a reboot, and the next run puts it back.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - C(ip) and C(bridge) of iproute2 with JSON output (iproute2 4.14 or later), and the kernel's C(vxlan) module.
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._paths.cni_path_unused
  - cnikit.cni._paths.conf_dir_unused
  - cnikit.cni._paths.cache_dir_unused
  - cnikit.cni._paths.timeout_unused
attributes:
  check_mode:
    support: full
    details:
      - Reads the device and its tables, then reports the changes it would make in RV(changes).
  diff_mode:
    support: full
    details:
      - The device, its addresses, neighbour and FDB entries before and after, one line each.
  idempotent:
    support: full
options:
  name:
    description: The device's name.
    type: str
    default: cni-vxlan0
  vni:
    description: The VXLAN network identifier, from 0 to 16777215; every host of the network uses the same.
    type: int
    default: 1
  port:
    description:
      - The UDP port the device sends to and listens on; every host of the network uses the same.
      - V(8472) is flannel's and the Linux default, V(4789) IANA's.
    type: int
    default: 8472
  local:
    description:
      - The host's underlay address, the source of the encapsulated packets (IPv4 or IPv6).
      - Required with O(state=present).
    type: str
  dev:
    description:
      - The underlay interface, the one holding O(local). The device's MTU is that interface's less 50 (IPv4
        underlay) or 70 (IPv6).
      - Required with O(state=present).
    type: str
  vtep:
    description:
      - The device's own IPv4 address, added as a C(/32), the address the peers' routes go C(via).
      - Required with O(state=present).
    type: str
  mac:
    description:
      - The device's MAC, a unicast address. The peers' FDB and neighbour entries name it, so a MAC that every
        host can compute (C(0a:58) and the four bytes of O(vtep), as CNI names hardware addresses) lets each
        host know every other's.
      - Required with O(state=present).
    type: str
  peers:
    description: The peers reached through the device.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: What the peer is called, in messages only.
        type: str
      vtep:
        description: The peer's VTEP address (its O(vtep)).
        type: str
        required: true
      mac:
        description: The peer's device MAC (its O(mac)).
        type: str
        required: true
      underlay:
        description: The peer's underlay address (its O(local)), of the same family as O(local).
        type: str
        required: true
  state:
    description: V(present) makes the device and its entries; V(absent) removes the device.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Needs root (C(CAP_NET_ADMIN)).
  - No encryption, as VXLAN has none. Use it on trusted networks only.
  - O(cni_path), O(conf_dir), O(cache_dir) and O(timeout) are accepted and not used.
seealso:
  - module: cnikit.cni.cni_route
  - ref: ansible_collections.cnikit.cni.docsite.routed-network
    description: The routed network, which uses VXLAN for the peers that are not adjacent.
"""

EXAMPLES = r"""
---
- name: VXLAN to a peer on another segment
  cnikit.cni.cni_vxlan:
    local: 10.199.0.11
    dev: eth0
    vtep: 10.244.0.0
    mac: 0a:58:0a:f4:00:00
    peers:
      - {name: fleet-3, vtep: 10.244.2.0, mac: "0a:58:0a:f4:02:00", underlay: 10.198.5.13}

- name: Route to that peer's subnet through the device
  cnikit.cni.cni_route:
    routes:
      - {dst: 10.244.2.0/24, via: 10.244.2.0, dev: cni-vxlan0, onlink: true, name: fleet-3}
    within: [10.244.0.0/16]

- name: Remove the device
  cnikit.cni.cni_vxlan:
    state: absent
"""

RETURN = r"""
changes:
  description: What the run changed (in check mode, would change), in order, one sentence each.
  returned: always
  type: list
  elements: str
  sample: ["create cni-vxlan0 (VNI 1, port 8472, local 10.199.0.11 dev eth0)", "add address 10.244.0.0/32 to cni-vxlan0"]
device:
  description:
    - The device after the run (in check mode, as it would be); null when there is none.
    - C(name), C(vni), C(port), C(local), C(dev), C(mac), C(addresses), C(neighbours) (each C(vtep), C(mac)) and
      C(fdb) (each C(mac), C(dst)).
  returned: always
  type: dict
  sample:
    name: cni-vxlan0
    vni: 1
    port: 8472
    local: 10.199.0.11
    dev: eth0
    mac: 0a:58:0a:f4:00:00
    addresses: [10.244.0.0/32]
    neighbours: [{vtep: 10.244.2.0, mac: "0a:58:0a:f4:02:00"}]
    fdb: [{mac: "0a:58:0a:f4:02:00", dst: 10.198.5.13}]
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _vxlan_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_vxlan_task)


if __name__ == "__main__":
    main()
