#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_route
short_description: Reconcile the kernel routes of a set of prefixes that this module owns
version_added: 1.1.0
description:
  - Makes the kernel routes of one routing table inside the prefixes O(within) the ones O(routes) lists. It adds
    those missing, replaces those whose gateway, interface or type changed, and deletes its own routes that
    O(routes) no longer lists. Runs in the host's network namespace.
  - A route is this module's own when its protocol number (C(proto) in C(ip route)) is O(protocol). Only its own
    routes are ever replaced or deleted, and only inside O(within); routes outside every prefix of O(within) are
    never touched, its own included.
  - Routes of others inside O(within) are reported in RV(conflicts), with a warning each, and left as they are;
    connected routes (C(proto kernel), such as a bridge's route to its own subnet) are not reported. A route of
    O(routes) whose destination and metric another protocol's route already holds in the table fails the task
    before anything changes, naming both.
  - Each O(routes[].via) must be directly reachable, as C(ip route get <via>) answering a route without a gateway
    shows (the test of flannel's C(host-gw)). Otherwise the task fails before anything changes, naming every
    such route by O(routes[].name), destination and gateway (unless the route is O(routes[].onlink)).
  - All changes go to the kernel in one batch. If the kernel refuses any of them, the ones it accepted are undone
    and the task fails naming the refused routes, so a run changes all of its routes or none.
  - The routes live in the kernel only, like C(ip route add); they are gone after a reboot or when a network
    manager flushes routes it did not make, and the next run puts them back.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
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
      - Reads the table and asks the kernel about every gateway as a real run does, then reports what would be
        added, replaced and removed without changing anything.
      - The O(routes[].dev) of an O(routes[].onlink) route may be missing in check mode, taken for a device an
        earlier task would have made (a VXLAN device).
  diff_mode:
    support: full
    details:
      - The module's own routes inside O(within) before and after, one C(ip route) line each.
  idempotent:
    support: full
options:
  routes:
    description:
      - The routes that should exist inside O(within), each identified by O(routes[].dst) and O(routes[].metric)
        (one route per destination and metric, as the kernel keeps them).
      - Every destination must lie inside a prefix of O(within).
      - Not used with O(state=absent).
    type: list
    elements: dict
    default: []
    suboptions:
      dst:
        description:
          - The destination, a network address with its prefix length (C(10.244.1.0/24), C(fd00:244:1::/64)).
            A host route is written C(10.244.1.5/32).
        type: str
        required: true
      via:
        description:
          - The gateway, an IP address of the destination's family, directly reachable from this host.
          - A V(unicast) route needs O(routes[].via), O(routes[].dev) or both; the other types take neither.
        type: str
      dev:
        description:
          - The interface the route leaves through. With O(routes[].via), the gateway must be reachable through it.
          - When omitted, the interface through which the kernel reaches the gateway is used (and returned).
        type: str
      type:
        description:
          - V(unicast) forwards through O(routes[].via) or O(routes[].dev); V(blackhole) drops the traffic silently,
            V(unreachable) and V(prohibit) drop it with an ICMP error (host unreachable, administratively
            prohibited).
          - An V(unreachable) route to a host's own subnet at a high metric keeps that subnet's traffic from
            leaving through the default route before its bridge exists, while the bridge's connected route (metric
            0) wins once it does.
        type: str
        choices: [unicast, blackhole, unreachable, prohibit]
        default: unicast
      metric:
        description:
          - The route's metric (priority); lower wins.
          - When omitted, the kernel's default for a route that names none, V(0) for IPv4 and V(1024) for IPv6.
        type: int
      onlink:
        description:
          - Take O(routes[].via) as on the link of O(routes[].dev) without asking the kernel (C(onlink) in
            C(ip route)), as a route through a VXLAN device to a peer's VTEP address needs. Needs both
            O(routes[].via) and O(routes[].dev); the adjacency check is skipped for such a route.
          - The returned routes carry C(onlink=true) when set.
        type: bool
        default: false
        version_added: 1.2.0
      name:
        description:
          - What the route is for, such as the peer host it leads to. Used in messages and returned values only;
            the kernel does not store it.
        type: str
  within:
    description:
      - The prefixes whose routes this module reconciles, such as a cluster's CIDR. Its own routes whose
        destination lies inside one of them and that O(routes) does not list are deleted; others' routes inside
        them are reported in RV(conflicts).
      - Required with O(state=absent) and when O(routes) is empty. When omitted, the destinations of O(routes)
        themselves.
    type: list
    elements: str
    default: []
  protocol:
    description:
      - The route protocol number that marks a route as this module's own, from 5 to 255 (0 to 4 are the
        kernel's, 4 being C(static), what C(ip route add) writes). V(210) is unassigned in iproute2's
        C(rt_protos); kube-router uses 17 and bird 12.
      - Two uses of the module that reconcile overlapping prefixes of one table need different numbers, or each
        deletes the other's routes.
    type: int
    default: 210
  table:
    description:
      - The routing table, by number (V(254) is C(main)); not V(255), the kernel's C(local) table.
    type: int
    default: 254
  state:
    description:
      - V(present) makes the routes inside O(within) those of O(routes).
      - V(absent) deletes this module's routes inside O(within) (and nothing else).
    type: str
    choices: [present, absent]
    default: present
notes:
  - Needs root (C(CAP_NET_ADMIN)), like the other modules of the collection. Talks to the kernel over
    rtnetlink directly, so it needs neither C(iproute2) nor pyroute2.
  - O(cni_path), O(conf_dir), O(cache_dir) and O(timeout) are accepted and not used.
seealso:
  - ref: ansible_collections.cnikit.cni.docsite.routes
    description: What the module reconciles, with the routed network across hosts as its example.
"""

EXAMPLES = r"""
---
# The routed network across hosts: on each member host, a route to every other member's subnet through
# that member's address, and an unreachable route for its own subnet that the bridge's route beats.
- name: Routes to the other members' subnets
  cnikit.cni.cni_route:
    routes:
      - {dst: 10.244.1.0/24, via: 10.199.0.12, name: fleet-2}
      - {dst: 10.244.2.0/24, via: 10.199.0.13, name: fleet-3}
      - {dst: 10.244.0.0/24, type: unreachable, metric: 4000, name: fleet-1}
    within: [10.244.0.0/16]

# On its own: a static route to a lab network through a router on the local link, and IPv6 too.
- name: Route the lab network through the lab router
  cnikit.cni.cni_route:
    routes:
      - {dst: 192.168.50.0/24, via: 10.0.0.254, name: lab router}
      - {dst: "fd00:50::/64", via: "fd00::254", dev: eth1, name: lab router v6}

# The same routes with a protocol number and table of their own.
- name: Lab routes in table 100
  cnikit.cni.cni_route:
    routes:
      - {dst: 192.168.50.0/24, via: 10.0.0.254}
    within: [192.168.0.0/16]
    table: 100
    protocol: 211

- name: Remove every route of this module inside the cluster CIDR
  cnikit.cni.cni_route:
    within: [10.244.0.0/16]
    state: absent
"""

RETURN = r"""
routes:
  description:
    - The module's own routes inside O(within) after the run (in check mode, as they would be), sorted by
      destination.
    - Each has C(dst), C(via) (null without a gateway), C(dev) (null for routes that go nowhere), C(type),
      C(metric) and C(table).
  returned: always
  type: list
  elements: dict
  sample:
    - {dst: 10.244.0.0/24, via: null, dev: null, type: unreachable, metric: 4000, table: 254}
    - {dst: 10.244.1.0/24, via: 10.199.0.12, dev: eth0, type: unicast, metric: 0, table: 254}
added:
  description: The routes added (in check mode, that would be), as in RV(routes), with C(name) where known.
  returned: always
  type: list
  elements: dict
  sample:
    - {dst: 10.244.2.0/24, via: 10.199.0.13, dev: eth0, type: unicast, metric: 0, table: 254, name: fleet-3}
replaced:
  description:
    - The routes replaced because their gateway, interface or type changed (in check mode, that would be), as they
      are after the run, with C(name) where known.
  returned: always
  type: list
  elements: dict
  sample:
    - {dst: 10.244.1.0/24, via: 10.199.0.22, dev: eth0, type: unicast, metric: 0, table: 254, name: fleet-2}
removed:
  description: The module's own routes deleted (in check mode, that would be), as in RV(routes).
  returned: always
  type: list
  elements: dict
  sample:
    - {dst: 10.244.5.0/24, via: 10.199.0.16, dev: eth0, type: unicast, metric: 0, table: 254}
conflicts:
  description:
    - Routes inside O(within) that are not this module's, left as they are, as in RV(routes) with their
      C(protocol) number. Connected routes (protocol 2, C(kernel)) are not listed.
  returned: always
  type: list
  elements: dict
  sample:
    - {dst: 10.244.9.0/24, via: 10.199.0.99, dev: eth0, type: unicast, metric: 0, table: 254, protocol: 4}
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _route_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_route_task)


if __name__ == "__main__":
    main()
