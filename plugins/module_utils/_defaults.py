# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The defaults of the collection's options, one home each: the modules' argument specs and the
services read them here. (The documentation of the options repeats them, as Ansible's docs must;
ansible-test's validate-modules holds the two equal.)"""

from __future__ import annotations

# Where runtimes look for plugin binaries (libcni's and the reference plugins' default CNI_PATH).
DEFAULT_CNI_PATH = ("/opt/cni/bin",)
DEFAULT_CONF_DIR = "/etc/cni/net.d"
DEFAULT_CACHE_DIR = "/var/lib/cni"
# Seconds one plugin binary may run before it is stopped.
DEFAULT_TIMEOUT = 60.0
# The container interface runtimes name when they are not told otherwise (CNI_IFNAME).
DEFAULT_IFNAME = "eth0"
# The route protocol number (rtm_protocol) that marks a route as cni_route's own: unassigned in
# iproute2's rt_protos, where kube-router uses 17 and bird 12.
DEFAULT_ROUTE_PROTOCOL = 210
# The routing table cni_route reconciles: main.
DEFAULT_ROUTE_TABLE = 254
# The length of each member's subnet in a routed network's cluster CIDR (cni_cluster_subnets).
DEFAULT_CLUSTER_HOST_PREFIX = 24
DEFAULT_CLUSTER_HOST_PREFIX_V6 = 64
# cni_vxlan's device, as flannel's vxlan backend makes it: VNI 1 on UDP port 8472 (the Linux
# default; IANA's port is 4789).
DEFAULT_VXLAN_DEVICE = "cni-vxlan0"
DEFAULT_VXLAN_VNI = 1
DEFAULT_VXLAN_PORT = 8472
