#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_underlay_info
short_description: The uplink holding a host's address, its MTU, and which peers are adjacent
version_added: 1.2.0
description:
  - Reads what a member of a routed network must know before it changes anything. The uplink is the interface
    holding O(address); RV(mtu) is its MTU.
  - Each peer of O(peers) is adjacent when the kernel's answer to C(ip route get <address>) is a unicast route
    without a gateway (flannel's test for C(host-gw)), so a route can go straight to it. The others need a tunnel,
    and RV(not_adjacent) says why each is not adjacent. The same test as cni_route's gateway check.
  - Changes nothing. Runs in the host's network namespace.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - C(ip) of iproute2 with JSON output (C(ip -j), iproute2 4.14 or later).
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._attributes.info_module
  - cnikit.cni._paths.cni_path_unused
  - cnikit.cni._paths.conf_dir_unused
  - cnikit.cni._paths.cache_dir_unused
  - cnikit.cni._paths.timeout_unused
options:
  address:
    description:
      - The host's own address in the network, an IP address one of its interfaces holds.
    type: str
    required: true
  peers:
    description:
      - The peers to test, by name, each with its address.
    type: dict
    default: {}
notes:
  - O(cni_path), O(conf_dir), O(cache_dir) and O(timeout) are accepted and not used.
seealso:
  - ref: ansible_collections.cnikit.cni.docsite.routed-network
    description: How the routed network chooses a direct route or VXLAN for each peer.
"""

EXAMPLES = r"""
---
- name: Which peers are on this host's segment
  cnikit.cni.cni_underlay_info:
    address: 10.199.0.11
    peers:
      fleet-2: 10.199.0.12
      fleet-3: 10.198.5.13
  register: underlay

- name: Show the peers that need VXLAN
  ansible.builtin.debug:
    msg: "{{ underlay.not_adjacent | map(attribute='name') | list }}"
"""

RETURN = r"""
interface:
  description: The interface holding O(address).
  returned: success
  type: str
  sample: eth0
mtu:
  description: That interface's MTU.
  returned: success
  type: int
  sample: 1500
adjacent:
  description: The names of the peers that are adjacent, sorted.
  returned: success
  type: list
  elements: str
  sample: [fleet-2]
not_adjacent:
  description: The peers that are not adjacent, sorted by name, each with its C(name), C(address) and C(reason).
  returned: success
  type: list
  elements: dict
  sample:
    - {name: fleet-3, address: 10.198.5.13, reason: "ip route get answers via 10.199.0.1 dev eth0"}
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _underlay_info_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_underlay_info_task)


if __name__ == "__main__":
    main()
