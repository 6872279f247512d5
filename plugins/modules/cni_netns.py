#!/usr/bin/python
# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: cni_netns
short_description: Create and remove named network namespaces
version_added: 0.1.0
description:
  - Makes a named network namespace, C(/var/run/netns/<name>), exist or not, the same kind of namespace
    C(ip netns add) creates (the two tools see and remove each other's namespaces).
  - A namespace exists when its name matches exactly and its file is a mounted namespace; C(cnit-ab) is
    never taken for C(cnit-abc), and a file left behind without its mount is replaced.
  - With O(state=absent), the attachments cached for the namespace (under either spelling,
    C(/var/run/netns/<name>) or C(/run/netns/<name>)) are DELeted first, each with the network configuration
    cached at its ADD, so that IP reservations, host-side veths and port mappings do not leak. That includes
    attachments other runtimes cached in O(cache_dir) for the namespace (found by the C(sandbox) of their result
    where libcni before 1.2 cached no C(netns)), since the namespace is named explicitly and removing it ends them. If a DEL fails
    the namespace is left in place and the task fails, so that a re-run can retry.
author:
  - cnikit maintainers (@cnikit)
requirements:
  - Python 3.9 or later on the managed node.
  - pyroute2 0.5.14 or later on Python 3.9, 0.6.4 or later on 3.10 and 3.11, 0.7.2 or later on 3.12 and later.
extends_documentation_fragment:
  - cnikit.cni._attributes
  - cnikit.cni._attributes.actiongroup_cni
  - cnikit.cni._paths.cni_path
  - cnikit.cni._paths.conf_dir_unused
  - cnikit.cni._paths.cache_dir
  - cnikit.cni._paths.timeout
attributes:
  check_mode:
    support: full
    details:
      - Predicts the change and lists the attachments that would be DELeted in RV(deleted_attachments).
  diff_mode:
    support: full
    details:
      - The namespace's state, V(present) or V(absent), before and after.
  idempotent:
    support: full
options:
  name:
    description:
      - Name of the namespace, not a path. It must start with a letter or digit and contain only letters,
        digits, C(_), C(.) and C(-).
    type: str
    required: true
  state:
    description: Whether the namespace should exist.
    type: str
    choices: [present, absent]
    default: present
  delete_attachments:
    description:
      - With O(state=absent), DEL the attachments cached for this namespace before removing it, and also when the
        namespace is already gone but attachments to it are still cached.
      - Set V(false) to remove only the namespace; the plugins' state for its attachments then stays until
        M(cnikit.cni.cni_gc) collects it.
    type: bool
    default: true
notes:
  - O(cni_path), O(cache_dir) and O(timeout) are used only to DEL attachments with O(state=absent); a DEL runs with
    the configuration cached at ADD, so O(conf_dir) is not needed.
seealso:
  - module: cnikit.cni.cni_attach
  - module: cnikit.cni.cni_gc
  - ref: ansible_collections.cnikit.cni.docsite.namespaces-gc-info
    description: How the three modules fit together.
"""

EXAMPLES = r"""
---
- name: Create the namespace web1
  cnikit.cni.cni_netns:
    name: web1

- name: Remove it, DELeting its attachments first so that their addresses return to the pool
  cnikit.cni.cni_netns:
    name: web1
    state: absent
    cni_path: [/usr/lib/cni]
"""

RETURN = r"""
name:
  description: The namespace's name.
  returned: always
  type: str
  sample: web1
path:
  description: The namespace's path.
  returned: always
  type: str
  sample: /var/run/netns/web1
deleted_attachments:
  description:
    - The cached attachments that were DELeted (in check mode, would be) before the namespace was removed.
    - Each has C(network), C(container_id), C(ifname), C(netns) (the path the attachment was made with) and
      C(managed) (false for an attachment another runtime made, which removing its namespace ends too).
  returned: always
  type: list
  elements: dict
  sample:
    - {network: demo, container_id: cnitool-77383ca0a0715733ca6f, ifname: eth0, netns: /var/run/netns/web1}
errors:
  description: The DELs that failed, each with C(msg) and the failing plugin's C(error) details.
  returned: failure, when a DEL of a cached attachment failed
  type: list
  elements: dict
"""

# First: the module_utils imported below are compiled once per host and Python, not on every run.
from ansible_collections.cnikit.cni.plugins.module_utils import _bytecode  # noqa: F401 pylint: disable=unused-import
from ansible_collections.cnikit.cni.plugins.module_utils import _netns_task
from ansible_collections.cnikit.cni.plugins.module_utils._ansible_glue import run_module


def main():
    run_module(_netns_task)


if __name__ == "__main__":
    main()
