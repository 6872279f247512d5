# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_cluster_subnets
short_description: Keep the subnets of a routed network's member hosts in a file on the controller
version_added: 1.1.0
description:
  - Gives each member host of a routed network a subnet of the cluster CIDR, and keeps the allocation in a YAML
    file on the controller (O(path)), meant to be reviewed and committed beside the inventory. The role
    C(cnikit.cni.routed_network) runs it once per play; it can also be used on its own.
  - This is an action that runs on the controller only; nothing runs on, or connects to, the managed host. Run it
    with C(run_once), or with C(delegate_to) and C(run_once) as any controller task.
  - "Stability first: a host that has a subnet in the file keeps it, whatever else changes in the group. A pinned
    host (C(pin) in O(members)) gets its pin, checked to lie inside O(cidr), to have the length O(host_prefix) and to
    overlap no other host's subnet. A new member in the play gets the lowest free subnet, members taken in the
    order of O(members) (inventory order): the same inventory and file give the same answer."
  - A member with no entry in the file but a record of its own on the host (C(recorded) in O(members)) gets that
    subnet back, so a lost or partial file is rebuilt from the hosts. A record that disagrees with the file fails
    the task, naming both.
  - A member that is not in the play (C(in_play=false) in O(members)) and has no entry in the file is
    RV(pending), since its record is unknown, and gets no subnet in this run. While the file does not exist,
    no new subnet is handed out either if there is such a member (it could be one that member records), and
    the task fails, naming the members to include.
  - A host that leaves the group (is no longer in O(members)) moves to C(released) in the file, and its subnet
    is not handed out again until an operator removes the entry there. A released host that rejoins gets its
    subnet back.
  - Moving a member's subnet (a pin that differs from its entry, or an entry that is no longer a subnet of
    O(cidr) of length O(host_prefix)) is refused while the host has attachments of the network, or when they
    are unknown, because they would keep the old gateway, which the bridge no longer has. The error says how to
    get out (detach them first, or undo the change). A host with no attachments is moved.
  - Every input is checked before anything is written, and an error names the host (or the file's key) and the
    value, for a member without an address, an address that is not an IP address (or of the other family than
    O(cidr)), two members with one address, a pin out of range or overlapping another, O(cidr) too small for the
    group, O(host_prefix) shorter than the prefix of O(cidr), and a file that cannot be read, is not YAML, or
    was broken by hand (a key written twice, unknown keys, a value that is not a CIDR, one subnet twice,
    entries that overlap).
  - The file is read, allocated and written under an exclusive lock (C(flock) on the sibling file
    C(.<name>.lock), which stays), so two plays at once never lose an entry. It is replaced atomically, keeping
    its mode, and only when its content changes; a file an operator reformatted but whose content is the same is
    left as it is.
author:
  - cnikit maintainers (@cnikit)
extends_documentation_fragment:
  - cnikit.cni._attributes
attributes:
  action:
    description: Runs as an action plugin on the controller; there is no module to run on the host.
    support: full
  check_mode:
    support: full
    details:
      - Returns the same result and diff as the real run would, and neither locks nor writes the file.
  diff_mode:
    support: full
    details:
      - The file's text before and after, under its path.
  idempotent:
    support: full
options:
  path:
    description:
      - The subnets file on the controller, such as C({{ inventory_dir }}/cni_cluster_subnets.yml). Its directory
        must exist; the file is created when it does not.
    type: path
    required: true
  cidr:
    description:
      - The cluster CIDR every member's subnet comes from, such as C(10.244.0.0/16) (IPv4 or IPv6, written with
        its network address).
    type: str
    required: true
  host_prefix:
    description:
      - The prefix length of each member's subnet. At least the prefix length of O(cidr).
    type: int
    default: 24
  cidr_v6:
    description:
      - For a dual-stack network, the IPv6 network every member's second subnet comes from, such as C(fd44::/48);
        O(cidr) is then the IPv4 one. Each member gets a subnet of each, by the same rules, kept in the file's keys
        C(cidr_v6), C(host_prefix_v6), C(subnets_v6) and C(released_v6), and C(address_v6), C(pin_v6) and
        C(recorded_v6) in O(members) are its IPv6 address, pin and record.
      - Leaving it out of a network whose file holds IPv6 subnets is refused, since removing IPv6 takes the hosts'
        IPv6 subnets away, which is for the operator to do in the file, after detaching the workloads.
    type: str
    version_added: 1.2.0
  host_prefix_v6:
    description:
      - The prefix length of each member's IPv6 subnet. At least the prefix length of O(cidr_v6).
    type: int
    default: 64
    version_added: 1.2.0
  network:
    description:
      - The name of the CNI network the subnets are for, named in the file's header and in messages.
    type: str
    required: true
  members:
    description:
      - Every member host of the group, in inventory order, by inventory hostname. Each value is a mapping with
        the keys below.
      - C(address) (str, required) is the IP address the other members route this host's subnet through.
      - C(pin) (str or null) is a subnet pinned for this host.
      - C(in_play) (bool, default V(true)) says whether the host is in this play, so that C(recorded) and
        C(attachments) are known.
      - C(recorded) (str or null) is the subnet the host records as its own (null when it has no record, or is not
        in the play).
      - C(attachments) (int or null) is the number of the host's attachments of O(network); null when unknown.
      - With O(cidr_v6), C(address_v6), C(pin_v6) and C(recorded_v6) are the IPv6 counterparts of C(address), C(pin)
        and C(recorded).
    type: dict
    required: true
notes:
  - The file is a YAML mapping with the keys C(cidr), C(host_prefix), C(subnets) (hostname to subnet) and
    C(released) (hostname to subnet), and for a dual-stack network C(cidr_v6), C(host_prefix_v6), C(subnets_v6) and
    C(released_v6), each after its IPv4 counterpart; hosts keep the file's order and new ones are added at the end,
    so a join is one added line per family. A file of one family is read as before.
seealso:
  - ref: ansible_collections.cnikit.cni.docsite.routed-network
    description: The role that runs this action, and how the file is used.
"""

EXAMPLES = r"""
---
- name: Allocate the subnets of two hosts, one of them pinned
  cnikit.cni.cni_cluster_subnets:
    path: /srv/inventory/cni_cluster_subnets.yml
    cidr: 10.244.0.0/16
    network: cluster
    members:
      node1: {address: 192.0.2.11, in_play: true, recorded: null, attachments: 0}
      node2: {address: 192.0.2.12, pin: 10.244.7.0/24, in_play: true, recorded: null, attachments: 0}
  run_once: true
  register: cluster_subnets

- name: Show each member's subnet
  ansible.builtin.debug:
    var: cluster_subnets.subnets
  run_once: true
"""

RETURN = r"""
subnets:
  description: Each member whose subnet is known, with its subnet, in the order of O(members).
  returned: success
  type: dict
  sample: {node1: 10.244.0.0/24, node2: 10.244.7.0/24}
addresses:
  description:
    - Each member with its address as checked (surrounding whitespace dropped), in the order of O(members), which
      the routes to its subnet go via.
  returned: success
  type: dict
  sample: {node1: 192.0.2.11, node2: 192.0.2.12}
released:
  description: The hosts that left the group, with their quarantined subnets, as the file lists them.
  returned: success
  type: dict
  sample: {old-node: 10.244.5.0/24}
gateways:
  description:
    - Each member with the first usable address of its subnet and the subnet's length, the gateway address of its
      bridge (and flannel's C(FLANNEL_SUBNET)).
  returned: success
  type: dict
  sample: {node1: 10.244.0.1/24, node2: 10.244.7.1/24}
  version_added: 1.2.0
gateways_v6:
  description: As RV(gateways), of the IPv6 subnets; empty without O(cidr_v6).
  returned: success
  type: dict
  sample: {node1: "fd44::1/64", node2: "fd44:0:0:1::1/64"}
  version_added: 1.2.0
subnets_v6:
  description: As RV(subnets), each member's IPv6 subnet; empty without O(cidr_v6).
  returned: success
  type: dict
  sample: {node1: "fd44::/64", node2: "fd44:0:0:1::/64"}
  version_added: 1.2.0
addresses_v6:
  description: As RV(addresses), each member's IPv6 address; empty without O(cidr_v6).
  returned: success
  type: dict
  sample: {node1: "2001:db8::11", node2: "2001:db8::12"}
  version_added: 1.2.0
released_v6:
  description: As RV(released), the quarantined IPv6 subnets; empty without O(cidr_v6).
  returned: success
  type: dict
  sample: {old-node: "fd44:0:0:5::/64"}
  version_added: 1.2.0
pending:
  description: The members with no subnet yet, because they are not in the play and have no entry in the file.
  returned: success
  type: list
  elements: str
  sample: [node3]
changes:
  description: What changed in the allocation, one sentence each (allocated, pinned, restored, rejoined, moved,
    released, a new O(cidr)).
  returned: success
  type: list
  elements: str
  sample: ["node3: allocated 10.244.1.0/24"]
path:
  description: The file, as O(path) gave it.
  returned: success
  type: str
  sample: /srv/inventory/cni_cluster_subnets.yml
"""
