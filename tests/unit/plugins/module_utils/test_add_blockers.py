# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the plugins' rules predict an ADD would meet on this host: a gateway bridge holding
another IPv4 address. The host's loopback interface stands in for a bridge that holds
127.0.0.1/8, so the tests read a real interface without creating one."""

from __future__ import annotations

import ipaddress

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import host_local
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.registry import (
    add_blockers, configures_existing_interface, honours_requested_ips,
)


def gateway_bridge(name="lo", subnet="10.9.8.0/24", **options):
    return {"type": "bridge", "bridge": name, "isGateway": True,
            "ipam": {"type": "host-local", "subnet": subnet}, **options}


def test_host_local_gateways_are_the_given_one_or_the_subnets_first_address_per_range_set():
    ipam = {"type": "host-local", "subnet": "10.1.0.0/16", "gateway": "10.1.0.254",
            "ranges": [[{"subnet": "fd00::/64"}], [{"subnet": "192.168.4.0/22"}, {"subnet": "192.168.8.0/24"}]]}
    assert host_local.gateway_sets(ipam) == [
        (["subnet"], [ipaddress.ip_interface("10.1.0.254/16")]),
        (["ranges", 0], [ipaddress.ip_interface("fd00::1/64")]),
        (["ranges", 1], [ipaddress.ip_interface("192.168.4.1/22"), ipaddress.ip_interface("192.168.8.1/24")])]


def test_a_gateway_bridge_holding_another_address_blocks_the_add_naming_the_way_out():
    (reason,) = add_blockers([gateway_bridge()])
    assert reason.startswith("plugins[0] (bridge): bridge lo on this host holds 127.0.0.1/8, not the gateway 10.9.8.1/24")
    assert "forceAddress: true" in reason


@pytest.mark.parametrize("plugin", [
    gateway_bridge(subnet="127.0.0.0/8"),                      # the address it holds is the gateway wanted
    gateway_bridge(forceAddress=True),                         # the plugin replaces the address
    gateway_bridge(isGateway=False),                           # the plugin puts no address on the bridge
    gateway_bridge(name="cnit-absent0"),                       # no such bridge yet
    gateway_bridge(subnet="fd00:9::/64"),                      # IPv6 addresses of other subnets may coexist
    {"type": "bridge", "bridge": "lo", "isGateway": True, "ipam": {"type": "dhcp"}},  # gateway unknown before ADD
    {"type": "ptp", "ipam": {"type": "host-local", "subnet": "10.9.8.0/24"}},
], ids=["same-gateway", "forceAddress", "no-gateway", "no-bridge", "ipv6", "dhcp", "other-plugin"])
def test_nothing_blocks_an_add_the_plugin_accepts(plugin):
    assert add_blockers([plugin]) == []


def test_an_ipam_type_that_is_no_string_is_no_known_ipam():
    # A conflist on disk may hold any JSON value there; the registry must not fail on an unhashable one.
    plugin = gateway_bridge()
    plugin["ipam"]["type"] = ["host-local"]
    assert add_blockers([plugin]) == []
    assert not honours_requested_ips([plugin])
    assert honours_requested_ips([gateway_bridge()])


@pytest.mark.parametrize("plugins, configures", [
    ([{"type": "loopback"}], True),
    ([{"type": "loopback"}, {"type": "tuning"}], True),  # the chain acts on the lo loopback took
    ([gateway_bridge(), {"type": "loopback"}], False),  # the bridge creates the interface
    ([{"type": "tuning"}], False),
    ([{"type": ["loopback"]}], False),  # a type that is no string is no known plugin
    ([], False),
])
def test_the_list_says_whether_an_add_configures_an_existing_interface(plugins, configures):
    assert configures_existing_interface(plugins) is configures
