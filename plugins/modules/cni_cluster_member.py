#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_cluster_member
short_description: A host's own part of a routed network across hosts (record, forwarding, firewall chains)
version_added: 1.1.0
description:
  - Makes a host a member of a routed network whose hosts each route their own subnet of one cluster CIDR, as the
    role C(cnikit.cni.routed_network) builds it. The module does the host's part beside the network and its routes
    (M(cnikit.cni.cni_network), M(cnikit.cni.cni_route)).
  - It keeps a record of the membership on the host, C(<cache_dir>/cnikit-cluster/<network>.json), holding the
    cluster CIDR, the host's subnet, whether it masquerades, and the value of the forwarding sysctl before the
    first run. The record is written atomically and only when it changes; M(cnikit.cni.cni_info) reports the
    records (O(cnikit.cni.cni_info#module:gather=clusters)).
  - It turns IP forwarding on, C(net.ipv4.ip_forward) for an IPv4 O(cidr), C(net.ipv6.conf.all.forwarding) for an
    IPv6 one, and both for a dual-stack network (O(cidr_v6)).
  - Where it turns IPv6 forwarding on, the interfaces whose C(accept_ra) is V(1) would stop taking router
    advertisements and lose the default route they give. It sets C(accept_ra) to V(2) on the uplink (the interface
    holding O(address_v6)) and on each interface whose IPv6 default route came from an advertisement, when their
    C(accept_ra) is V(1), and keeps their values in the record (C(accept_ra_before)), which O(state=absent)
    restores. Where IPv6 forwarding was on already, C(accept_ra) is left as it is.
  - It owns a filter chain, C(CNIKIT-FWD-<hash of the network name>), accepting forwarded traffic from and to
    O(cidr), jumped to from the chain C(FORWARD), so that a firewall whose C(FORWARD) policy is C(DROP) still
    forwards the cluster's traffic. A jump that is missing is inserted first in C(FORWARD); one already there is
    left where it is.
  - With O(masquerade), it also owns a nat chain, C(CNIKIT-MASQ-<hash>), jumped to from C(POSTROUTING) for traffic
    from O(cidr). Traffic to O(cidr) returns unchanged, so a receiving workload on another member sees the
    sender's own address, and the rest, but multicast, is masqueraded to the host's address.
  - The jumps carry the comment C(cnikit.cni cluster network <network>). IPv6 uses C(ip6tables).
  - Only what differs from this state is changed, as C(iptables-save) shows it (a rule missing from a chain is
    put back, another rule in it removed). With O(state=absent), the chains and their jumps are removed, the
    forwarding sysctl is set back to the value the record holds, and the record is deleted.
  - Several routed networks of one IP family on a host share its forwarding sysctl. While another network of the
    same family still has a record, O(state=absent) leaves forwarding on; if this network's first run turned it
    on, it writes the value from before into that network's record (the first by name, unless one of them already
    holds a value other than V(1)), so the last network to leave restores the host's value from before the first
    joined. Another network's record that cannot be read fails the task, naming the file, before anything
    changes.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - C(iptables) (and C(ip6tables) for an IPv6 O(cidr) or with O(cidr_v6)), the legacy or the nf_tables variant.
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._paths.cni_path_unused
  - cnikit.cni._paths.conf_dir_unused
  - cnikit.cni._paths.timeout_unused
attributes:
  check_mode:
    support: full
    details:
      - Reads the record, the sysctl and the tables, and reports the changes a real run would make in
        RV(changes).
  diff_mode:
    support: full
    details:
      - The record, the forwarding sysctls, C(accept_ra) and the owned chains with their jumps (one C(iptables -S) line each),
        before and after.
  idempotent:
    support: full
options:
  network:
    description:
      - Name of the routed network, the CNI network name its members declare. It names the record and, through a
        hash, the chains.
    type: str
    required: true
  cidr:
    description:
      - The cluster CIDR every member's subnet comes from, a network address such as V(10.244.0.0/16).
      - Required with O(state=present). Changing it to the other IP family is refused while the record holds
        the first; remove the network with O(state=absent) first.
    type: str
  subnet:
    description:
      - This host's subnet, inside O(cidr), as the allocation gave it, recorded for M(cnikit.cni.cni_info).
      - Required with O(state=present).
    type: str
  cidr_v6:
    description:
      - For a dual-stack network, the IPv6 cluster CIDR (such as V(fd44::/48)); O(cidr) is then the IPv4 one. The
        host forwards IPv6 too, and its chains are made with C(ip6tables) as well, for O(cidr_v6).
      - Leaving it out while the record holds an IPv6 part is refused; remove the network with O(state=absent)
        first.
    type: str
    version_added: 1.2.0
  subnet_v6:
    description:
      - This host's IPv6 subnet, inside O(cidr_v6). Required with O(cidr_v6).
    type: str
    version_added: 1.2.0
  address_v6:
    description:
      - This host's IPv6 address on the uplink, the one the other members route its IPv6 subnet through; the
        interface holding it keeps its router-advertised default route (see above).
    type: str
    version_added: 1.2.0
  masquerade:
    description:
      - Masquerade traffic from O(cidr) to destinations outside it. Traffic between members is never masqueraded.
      - V(false) removes the nat chain if an earlier run made it.
    type: bool
    default: true
  state:
    description:
      - V(present) keeps the record, forwarding and the chains as described; V(absent) removes the chains and the
        record and restores forwarding, unless another network of the same IP family still has a record.
      - Without a record, V(absent) still removes the network's chains of both IP families.
    type: str
    choices: [present, absent]
    default: present
  cache_dir:
    description:
      - Directory holding the record, in its subdirectory C(cnikit-cluster). The libcni-compatible result cache
        of the other modules lives in the same directory.
      - As the cache's own subdirectories, C(cnikit-cluster) is created with mode C(0700), never followed if it
        is a symbolic link, and refused if it is owned by a user other than root or the one running the module,
        or writable by group or others. A O(cache_dir) another user owns or can write is used with a warning.
    type: path
    default: /var/lib/cni
notes:
  - The sysctl and the chains do not survive a reboot (the record does); run the module, or the role, again after
    one. The sysctl is written through C(/proc/sys), not C(/etc/sysctl.d).
  - Setting C(net.ipv6.conf.all.forwarding) makes the kernel ignore router advertisements on interfaces whose
    C(accept_ra) is not V(2); a host that takes its IPv6 default route from them loses it.
  - When the last routed network of its IP family leaves, O(state=absent) sets the forwarding sysctl back to its
    value before the first run even if something else has needed it since (a bridge network with C(isGateway));
    set it again for that use.
seealso:
  - module: cnikit.cni.cni_info
  - module: cnikit.cni.cni_network
"""

EXAMPLES = r"""
---
- name: Make this host a member of the routed network cluster, with its subnet
  cnikit.cni.cni_cluster_member:
    network: cluster
    cidr: 10.244.0.0/16
    subnet: 10.244.3.0/24

- name: Without masquerading traffic that leaves the cluster CIDR
  cnikit.cni.cni_cluster_member:
    network: cluster
    cidr: 10.244.0.0/16
    subnet: 10.244.3.0/24
    masquerade: false

- name: Leave it, restoring forwarding and removing the chains
  cnikit.cni.cni_cluster_member:
    network: cluster
    state: absent
"""

RETURN = r"""
record:
  description:
    - The host's record of the network before the task, null when there was none.
    - C(ip_forward_before) is the forwarding sysctl's value before the first run, which O(state=absent) restores
      (or hands on to another network of the same IP family that still has a record).
    - A dual-stack network's record also holds C(cidr_v6), C(subnet_v6) and C(ip6_forward_before) (IPv6's);
      C(accept_ra_before) maps each interface whose C(accept_ra) the module set to V(2) to its value before.
  returned: always
  type: dict
  sample:
    network: cluster
    cidr: 10.244.0.0/16
    subnet: 10.244.3.0/24
    masquerade: true
    ip_forward_before: 0
path:
  description: The record's file.
  returned: always
  type: str
  sample: /var/lib/cni/cnikit-cluster/cluster.json
chains:
  description: The names of the network's chains, C(forward) in the filter table and C(masquerade) in the nat table.
  returned: always
  type: dict
  sample: {forward: CNIKIT-FWD-164CF1CA, masquerade: CNIKIT-MASQ-164CF1CA}
kept:
  description:
    - What the network keeps on the host once the task is done (in check mode, would keep), for a replay of it without
      the module, such as the P(cnikit.cni.routed_network#role) role's boot script. Empty lists with O(state=absent).
    - C(sysctls) in the order to write them (C(accept_ra) before forwarding), each with its C(name), its C(path) under
      C(/proc/sys) and its C(value).
    - C(chains), each with the C(command) (C(iptables) or C(ip6tables)), its C(table), its name (C(chain)), the
      built-in chain (C(hook)) whose rule C(jump) sends traffic to it, and its C(rules) in order; C(jump) and each
      rule are the arguments that follow C(-A <chain>).
  returned: always
  type: dict
  version_added: 1.2.0
  sample:
    sysctls:
      - {name: net.ipv4.ip_forward, path: /proc/sys/net/ipv4/ip_forward, value: 1}
    chains:
      - command: iptables
        table: filter
        chain: CNIKIT-FWD-164CF1CA
        hook: FORWARD
        jump: [-m, comment, --comment, cnikit.cni cluster network cluster, -j, CNIKIT-FWD-164CF1CA]
        rules: [[-s, 10.244.0.0/16, -j, ACCEPT], [-d, 10.244.0.0/16, -j, ACCEPT]]
changes:
  description:
    - What the task changed (in check mode, would change), in order, one line each. The changes to the tables are the
      C(iptables) commands run.
    - When the task fails, the changes it made before the failure.
  returned: always
  type: list
  elements: str
  sample:
    - write /var/lib/cni/cnikit-cluster/cluster.json
    - net.ipv4.ip_forward = 1 (was 0)
    - iptables -w -t filter -N CNIKIT-FWD-164CF1CA
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _cluster_member_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_cluster_member_task)


if __name__ == "__main__":
    main()
