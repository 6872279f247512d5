# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This doc fragment is PRIVATE and should only be used by this collection.
"""Documentation of the options built by module_utils._argspec.PATH_OPTIONS."""

from __future__ import annotations


class ModuleDocFragment:

    CNI_PATH = r"""
options:
  cni_path:
    description:
      - Directories searched, in order, for plugin binaries (the runtime's C(CNI_PATH)).
      - The first regular, executable file named after the plugin's C(type) is used.
      - Each entry must be an absolute path; a relative one is refused, naming it, before any plugin runs (it would
        be looked up from the module's working directory).
    type: list
    elements: path
    default: [/opt/cni/bin]
"""

    CONF_DIR = r"""
options:
  conf_dir:
    description:
      - Directory of network configuration files, loaded in libcni's order.
    type: path
    default: /etc/cni/net.d
"""

    CACHE_DIR = r"""
options:
  cache_dir:
    description:
      - Directory of the libcni-compatible result cache (C(<cache_dir>/results/<network>-<container id>-<ifname>)).
    type: path
    default: /var/lib/cni
"""

    TIMEOUT = r"""
options:
  timeout:
    description:
      - Seconds one plugin call may take; past it the plugin is sent SIGTERM, then SIGKILL.
    type: float
    default: 60.0
"""

    CONF_DIR_UNUSED = r"""
options:
  conf_dir:
    description:
      - Not used by this module. Accepted so that the collection's shared options can be set once for every
        module with C(module_defaults) and C(group/cnikit.cni.cni).
    type: path
    default: /etc/cni/net.d
"""

    CACHE_DIR_UNUSED = r"""
options:
  cache_dir:
    description:
      - Not used by this module. Accepted so that the collection's shared options can be set once for every
        module with C(module_defaults) and C(group/cnikit.cni.cni).
    type: path
    default: /var/lib/cni
"""

    CNI_PATH_UNUSED = r"""
options:
  cni_path:
    description:
      - Not used by this module. Accepted so that the collection's shared options can be set once for every
        module with C(module_defaults) and C(group/cnikit.cni.cni).
    type: list
    elements: path
    default: [/opt/cni/bin]
"""

    TIMEOUT_UNUSED = r"""
options:
  timeout:
    description:
      - Not used by this module. Accepted so that the collection's shared options can be set once for every
        module with C(module_defaults) and C(group/cnikit.cni.cni).
    type: float
    default: 60.0
"""
