#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_attach
short_description: Attach network namespaces to CNI networks, declaratively
version_added: 0.1.0
description:
  - Makes "namespace X is attached to network N on interface I" true, the way a container
    runtime does it with libcni (ADD/CHECK/DEL), and records the attachment in libcni's result
    cache so that C(cnitool), containerd and CRI-O see it too.
  - With O(state=present) an attachment already in place with the same configuration and
    arguments is verified with CHECK (where the network's cniVersion allows it) and left alone;
    a failing CHECK or a vanished namespace is repaired (DEL then ADD); a changed configuration or
    changed arguments replace the attachment (DEL with the configuration cached at ADD, then
    ADD).
  - A replace never leaves a workload without its network. A change the plugins would refuse on the host as it is
    now (a gateway bridge that holds an IPv4 address other than the new gateway, without C(forceAddress), as after a
    change of the subnet) fails before anything is removed, also in check mode, and names the ways out. If the new
    ADD fails anyway, the attachment is put back as it was (its previous configuration and arguments, asking
    host-local for its previous addresses) and the task fails reporting both.
  - A failed ADD is rolled back with a DEL of the whole plugin list, so it leaves nothing behind.
  - Before an ADD, the interface name must be free in the namespace; an interface already there (another
    network's, or the container runtime's own) is refused with an error and nothing changes, so neither the ADD
    nor its rollback can remove someone else's interface. A plugin that configures an existing interface
    instead of creating one (loopback with O(ifname=lo), as containerd and CRI-O attach it) is not refused.
  - A repair or replacement asks host-local IPAM for the addresses the attachment had, so a workload keeps its
    address where the IPAM can give it back; RV(address_changed) says when it could not. An ADD interrupted by a
    killed run (Ctrl-C) is repaired on the next run asking for the addresses host-local still holds for it.
  - An attachment found at the declared key that another runtime (podman, containerd, CRI-O, C(cnitool)) cached,
    rather than this collection, is verified and otherwise left alone; if it differs from the declaration or fails
    CHECK, the task fails instead of repairing or replacing it. O(state=absent) does detach it, with the
    configuration, namespace and arguments its runtime cached.
  - A cache entry at the declared key that cannot be read (empty, or cut short by a runtime that crashed while
    writing it) or that is in libcni's legacy format is never taken for this collection's; the task fails naming
    the key and the file, in check mode too, and nothing changes. O(state=absent) detaches it.
  - CHECK failures that are known defects of released plugins (portmap's IPv6 check up to v1.1.x, tuning's IFNAME
    sysctls before v1.3.0, the bridge plugin comparing a bridge MAC that moves as ports join, and before v1.3.0
    looking for a route without C(gw) as a route without a gateway) are tolerated and warned about once per
    attachment, not repaired.
  - CHECK is not sent to a plugin whose IPAM is C(dhcp) when the installed C(dhcp) may be a release before v1.2.0
    (its release recorded as older, or unrecorded and the binary older than v1.6.0), whose daemon starts another
    lease for every CHECK and renews the forgotten one forever, until it runs out of file descriptors. The
    interface and the address of its lease are verified in the namespace instead (the attachment is repaired when
    they are missing), and the task warns once, naming the attachments.
  - Many attachments are converged in one task with O(attachments), several at a time.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - pyroute2 0.5.14 or later on Python 3.9, 0.6.4 or later on 3.10 and 3.11, 0.7.2 or later on 3.12 and later; only with O(create_netns=true).
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
      - Predicts the RV(action) without running ADD or DEL. CHECK, which changes nothing, still runs.
      - What the real run would refuse fails in check mode too, with the same error (an interface name already
        taken in the namespace, an unreadable cache entry, an attachment another runtime made that differs or
        fails CHECK).
      - A network that a M(cnikit.cni.cni_network) task earlier in the play would have changed is predicted against
        the conflist that task would have written (it records it as a host fact in check mode), so a changed
        network predicts V(replaced).
  diff_mode:
    support: full
    details:
      - One line per changed attachment, its network, container ID and ifname, then V(attached) or V(detached)
        before and after; after, a replaced or repaired attachment reads V(attached (replaced)) or
        V(attached (repaired)), so a check run's diff shows what it would replace.
  idempotent:
    support: full
options:
  network:
    description:
      - Name of a network to load from O(conf_dir), in libcni's order (the first file that declares it wins).
      - Mutually exclusive with O(config).
    type: str
  config:
    description:
      - A whole network configuration list (a dict, or a JSON string) to use instead of a file in O(conf_dir).
      - Each plugin's C(type) and C(ipam.type) must be a file name (a letter or digit, then letters, digits, C(_),
        C(.), C(-)), as M(cnikit.cni.cni_network) requires; anything else is refused, naming its JSON path, before
        any plugin runs.
      - A single-plugin network (a C(.conf), with a plugin C(type) and no C(plugins)) is attached as the one-plugin
        list libcni loads it as, C(name) and C(cniVersion) the list's.
    type: raw
  netns:
    description:
      - The network namespace, as a name (mapped to C(/var/run/netns/<name>), the spelling C(ip netns) and
        C(cnitool)'s documentation use) or as an absolute path, used as given.
      - A path may not contain C(..), and with O(state=present) an existing file that is no network namespace
        (such as a regular file) is refused before any plugin runs.
      - The host's own network namespace (whatever path names it, such as C(/proc/1/ns/net), that is, the same device and
        inode as the module's own namespace or PID 1's) is accepted with O(state=present), with a warning that the
        plugins will configure the host's own interfaces.
      - Required unless every item of O(attachments) names one.
    type: str
  ifname:
    description:
      - Name of the interface inside the namespace (C(CNI_IFNAME)), at most 15 bytes of printable ASCII without
        C(/) or C(:). Control characters and letters outside ASCII (look-alikes such as a Cyrillic e) are
        refused.
    type: str
    default: eth0
  container_id:
    description:
      - The container ID (C(CNI_CONTAINERID)) that keys the attachment.
      - Defaults to the ID C(cnitool) derives from the netns path, C(cnitool-) followed by the first 20 hex
        digits of the path's SHA-512, so that C(cnitool check) and C(cnitool del) act on what this module added.
        The path is C(/var/run/netns/<name>) for a name; C(/run/netns/x) and C(/var/run/netns/x) give different IDs.
    type: str
  args:
    description:
      - C(CNI_ARGS) for the plugins, as a mapping, a list of C([key, value]) pairs or a C(K=V;K2=V2) string.
        Keys and values must not contain C(;) or C(=).
      - Compared with a cached attachment's arguments as a mapping, whatever their order (containerd caches them
        in random order).
    type: raw
  capability_args:
    description:
      - Runtime values for capabilities (C(runtimeConfig)), for example C(portMappings), C(bandwidth), C(ips),
        C(mac). A plugin receives only those it enables in its C(capabilities).
    type: dict
  state:
    description: Whether the attachment should exist.
    type: str
    choices: [present, absent]
    default: present
  create_netns:
    description:
      - Create a named namespace that does not exist yet (O(state=present) only).
      - A namespace created by the task for attachments that all failed is removed again, so a failed task leaves
        nothing behind.
      - An attachment cached in a namespace that was gone and is created anew is repaired (DEL, then ADD), at every
        cniVersion; below 0.4.0, which has no CHECK, it would otherwise be taken as healthy.
    type: bool
    default: false
  run_check:
    description:
      - Run the plugins' CHECK on attachments that are already in place. Without it, an attachment whose cache
        entry matches is taken as healthy as long as its namespace exists.
    type: bool
    default: true
  _planned_networks:
    description:
      - Internal, set by the collection's action plugin in check mode, never by users. The conflists that
        M(cnikit.cni.cni_network) tasks earlier in the play would have written, by network name.
    type: dict
  attachments:
    description:
      - Several attachments in one task. Each item takes the same keys as the top-level options; a key an item
        leaves out takes the top-level value.
      - Results are returned per item in RV(attachments); one failing item does not stop the others, and the
        task fails if any item failed.
    type: list
    elements: dict
    suboptions:
      network:
        description: As O(network).
        type: str
      config:
        description: As O(config).
        type: raw
      netns:
        description: As O(netns).
        type: str
      ifname:
        description: As O(ifname).
        type: str
      container_id:
        description: As O(container_id).
        type: str
      args:
        description: As O(args).
        type: raw
      capability_args:
        description: As O(capability_args).
        type: dict
      state:
        description: As O(state).
        type: str
        choices: [present, absent]
      create_netns:
        description: As O(create_netns).
        type: bool
  parallel:
    description:
      - How many attachments of O(attachments) are converged at the same time.
      - The first attachment of each network is converged before that network's others start, since its ADD makes
        the host's side of a changed configuration (a bridge moved to a new gateway address with C(forceAddress)),
        which concurrent ADDs of the same network would race for.
    type: int
    default: 4
seealso:
  - module: cnikit.cni.cni_network
  - module: cnikit.cni.cni_netns
  - module: cnikit.cni.cni_gc
"""

EXAMPLES = r"""
---
- name: Attach namespace web1 to the network "demo" on eth0
  cnikit.cni.cni_attach:
    network: demo
    netns: web1
    create_netns: true
  register: web1

- name: Show its address
  ansible.builtin.debug:
    msg: "{{ web1.ips }}"

- name: Publish port 8080 of the host to port 80 of the namespace (portmap plugin in the chain)
  cnikit.cni.cni_attach:
    network: demo
    netns: web1
    capability_args:
      portMappings:
        - {hostPort: 8080, containerPort: 80, protocol: tcp}

- name: Attach three namespaces in one task, two at a time
  cnikit.cni.cni_attach:
    network: demo
    create_netns: true
    parallel: 2
    attachments:
      - netns: worker1
      - netns: worker2
      - netns: worker3
        ifname: net1

- name: Detach
  cnikit.cni.cni_attach:
    network: demo
    netns: web1
    state: absent
"""

RETURN = r"""
action:
  description:
    - What the task did (or would do in check mode), one of V(added), V(unchanged), V(repaired), V(replaced),
      V(deleted), V(absent).
  returned: always, without O(attachments)
  type: str
  sample: added
result:
  description: The CNI result of the attachment, at the network's cniVersion. Null when detached or in check mode.
  returned: always, without O(attachments)
  type: dict
  sample:
    cniVersion: 1.0.0
    interfaces:
      - {name: cni0, mac: "0a:58:0a:16:00:01"}
      - {name: veth1a2b3c4d, mac: "3e:1f:aa:bb:cc:dd"}
      - {name: eth0, mac: "86:55:0a:16:00:05", sandbox: /var/run/netns/web1}
    ips:
      - {interface: 2, address: 10.22.0.5/16, gateway: 10.22.0.1}
interfaces:
  description: Names of the interfaces the result places in the namespace.
  returned: always, without O(attachments)
  type: list
  elements: str
  sample: [eth0]
ips:
  description:
    - The addresses of the result, in CIDR form.
    - Empty in check mode for an attachment that would be added, repaired or replaced (its addresses are known only
      once the IPAM hands them out). An unchanged attachment returns the addresses of its cached result.
  returned: always, without O(attachments)
  type: list
  elements: str
  sample: [10.22.0.5/16]
mac:
  description: MAC address of the first interface in the namespace.
  returned: always, without O(attachments)
  type: str
  sample: "86:55:0a:16:00:05"
container_id:
  description: The container ID that keys the attachment.
  returned: always, without O(attachments)
  type: str
  sample: cnitool-77383ca0a0715733ca6f
netns:
  description: The namespace path the plugins were given.
  returned: always, without O(attachments)
  type: str
  sample: /var/run/netns/web1
network:
  description: The network's name.
  returned: always, without O(attachments)
  type: str
  sample: demo
ifname:
  description: The interface name in the namespace.
  returned: always, without O(attachments)
  type: str
  sample: eth0
address_changed:
  description:
    - True when a repair or replacement gave the attachment other addresses than it had (the IPAM could not give
      the old ones back); RV(previous_ips) lists the old ones.
  returned: always, without O(attachments)
  type: bool
  sample: false
previous_ips:
  description:
    - The addresses the attachment had before a repair or replacement, where they are known (its cached result, or
      for an interrupted ADD the addresses host-local held for it); compare with RV(ips), or read
      RV(address_changed).
  returned: when a repair or replacement knew the addresses the attachment had
  type: list
  elements: str
  sample: [10.22.0.5/16]
created_netns:
  description: Names of the namespaces created (or, in check mode, to be created) because of O(create_netns).
  returned: always
  type: list
  elements: str
  sample: [web1]
attachments:
  description:
    - One entry per item of O(attachments), in order, with the keys above plus C(state), C(changed), C(failed),
      C(warnings) and, for a failed item, C(msg) and C(error) (plugin, verb, code, details).
    - Warnings printed by the task name the host, network, namespace and interface, so that a fleet's warnings stay
      apart.
  returned: with O(attachments)
  type: list
  elements: dict
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _attach_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_attach_task)


if __name__ == "__main__":
    main()
