# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Identifier rules (_identifiers): the spec's character rules, netns paths, cnitool's
container IDs and CNI_ARGS."""

from __future__ import annotations

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _identifiers
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._exec import find_plugin
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import (
    check_container_id, check_ifname, check_netns_name, check_network_name, check_plugin_type, cni_args_string,
    cnitool_container_id, netns_name, netns_path, normalise_cni_args)
from ansible_collections.cnikit.cni.plugins.module_utils._manifest import is_plugin_name
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_network_list

ID_CHECKS = (check_network_name, check_container_id, check_netns_name)


@pytest.mark.parametrize("check", ID_CHECKS)
@pytest.mark.parametrize("value", ["a", "A", "0", "1abc", "a_b.c-d", "net.v1", "x" * 255, "abc-"])
def test_valid_ids(check, value):
    assert check(value) == value


@pytest.mark.parametrize("check", ID_CHECKS)
@pytest.mark.parametrize("value", [
    "", None, 5, ["a"], "-a", "_a", ".a", ".", "..", "../x", "a/b", "/abs", "a b", "a\x00b",
    "a\n", "\na", "é", "a:b", "a;b", "x" * 256,
])
def test_invalid_ids_raise_config_errors_naming_the_value(check, value):
    with pytest.raises(ConfigError) as info:
        check(value, "the.field")
    assert info.value.path == "the.field"
    assert info.value.value == value


def test_id_error_message_reads_well():
    with pytest.raises(ConfigError) as info:
        check_container_id("../etc")
    assert str(info.value) == ("container_id: container ID must start with a letter or digit and contain only "
                               "letters, digits, '_', '.' and '-' (got '../etc')")


@pytest.mark.parametrize("value", ["eth0", "a", "x" * 15, "net1.100", "eth-0", "veth@1", "e~th_0"])
def test_valid_ifnames(value):
    assert check_ifname(value) == value


@pytest.mark.parametrize("value, message", [
    ("", "non-empty"), (None, "non-empty"), (3, "non-empty"),
    ("x" * 16, "longer than 15 bytes"), ("é" * 8, "longer than 15 bytes"),
    (".", "'.' or '..'"), ("..", "'.' or '..'"),
    ("a/b", "must not contain"), ("../x", "must not contain"), ("a:b", "must not contain"),
    ("a b", "must not contain"), ("a\tb", "must not contain"), ("a\nb", "must not contain"),
    ("a\x00", "must not contain"), ("eth\x1b", "must not contain"), ("\u0435th0", "must not contain"),
    ("ü" * 7, "must not contain"),
])
def test_invalid_ifnames(value, message):
    with pytest.raises(ConfigError, match=message) as info:
        check_ifname(value)
    assert info.value.path == "ifname"


@pytest.mark.parametrize("value, expected", [
    ("cnitest", "/var/run/netns/cnitest"),
    ("/var/run/netns/cnitest", "/var/run/netns/cnitest"),
    ("/run/netns/testing", "/run/netns/testing"),
    ("/run//netns/./x/", "/run/netns/x"),
    ("//proc/1/ns/net", "/proc/1/ns/net"),
])
def test_netns_path(value, expected):
    assert netns_path(value) == expected


@pytest.mark.parametrize("value, message", [
    ("", "non-empty"), (None, "non-empty"), ("a\x00", "NUL"), ("../x", "must be absolute"),
    ("run/netns/x", "must be absolute"), ("bad name", "must start with a letter"), (".hidden", "must start"),
    ("/var/run/netns/../netns/y", "must not contain '..'"),
])
def test_netns_path_rejects(value, message):
    with pytest.raises(ConfigError, match=message):
        netns_path(value)


@pytest.mark.parametrize("path, expected", [
    ("/var/run/netns/a", "a"), ("/run/netns/b-1", "b-1"), ("/proc/1/ns/net", None),
    ("/var/run/netns/sub/a", None), ("/var/run/netns/.x", None),
])
def test_netns_name(path, expected):
    assert netns_name(path) == expected


@pytest.mark.parametrize("netns, container_id", [
    ("/var/run/netns/cnitest", "cnitool-20c433bb2b1d6ede56d6"),
    ("/var/run/netns/testing", "cnitool-77383ca0a0715733ca6f"),
    ("/run/netns/testing", "cnitool-43057b9dcc39fe733071"),
])
def test_cnitool_container_id(netns, container_id):
    assert cnitool_container_id(netns) == container_id
    assert check_container_id(container_id) == container_id


@pytest.mark.parametrize("args, expected", [
    (None, []), ("", []), ({}, []), ([], []),
    ("IgnoreUnknown=1;IP=10.0.0.5", [["IgnoreUnknown", "1"], ["IP", "10.0.0.5"]]),
    ({"K8S_POD_NAME": "web", "B": True, "N": 3}, [["K8S_POD_NAME", "web"], ["B", "true"], ["N", "3"]]),
    ([["A", "1"], ("B", "2")], [["A", "1"], ["B", "2"]]),
])
def test_normalise_cni_args(args, expected):
    assert normalise_cni_args(args) == expected


@pytest.mark.parametrize("args, path", [
    ("K", "args"), ("K=V=W", "args"), ("A=1;;B=2", "args"), (42, "args"),
    ([["A"]], "args[0]"), (["A=1"], "args[0]"), ([["A", ""]], "args[0]"), ([["", "v"]], "args[0]"),
    ([["A;B", "1"]], "args[0]"), ({"A": "x=y"}, "args[0]"), ({"A": None}, "args[0]"), ({"A": "\x00"}, "args[0]"),
])
def test_normalise_cni_args_rejects_what_would_not_parse_back(args, path):
    with pytest.raises(ConfigError) as info:
        normalise_cni_args(args)
    assert info.value.path == path


def test_cni_args_string_round_trips():
    pairs = [["IgnoreUnknown", "1"], ["IP", "10.0.0.5/24"]]
    assert cni_args_string(pairs) == "IgnoreUnknown=1;IP=10.0.0.5/24"
    assert normalise_cni_args(cni_args_string(pairs)) == pairs
    assert cni_args_string([]) == ""


@pytest.mark.parametrize("path, expected", [
    ("/run/netns/a", "/var/run/netns/a"),
    ("/var/run/netns/a", "/var/run/netns/a"),
    ("/var/run/netns//a", "/var/run/netns/a"),
    ("/proc/42/ns/net", "/proc/42/ns/net"),
    ("/proc/42/../42/ns/net", "/proc/42/ns/net"),
    ("", ""),
])
def test_canonical_netns_gives_one_spelling_per_namespace(path, expected):
    assert _identifiers.canonical_netns(path) == expected


@pytest.mark.parametrize("value", ["bridge", "host-local", "k8s_portmap.v2", "0x"])
def test_plugin_file_names(value):
    assert check_plugin_type(value) == value


@pytest.mark.parametrize("value", ["bridge\n", "", "../bridge", "a/b", "a\\b", ".", "..", ".hidden", "-x", "a b", 7, None])
def test_not_plugin_file_names(value):
    """One rule for validation, the executor, the installer and the manifest; a trailing newline
    passed the manifest's old ``$``-anchored pattern."""
    with pytest.raises(ConfigError) as info:
        check_plugin_type(value, "plugins[0].type")
    assert info.value.path == "plugins[0].type"


def test_every_plugin_name_check_has_the_one_rule(tmp_path):
    assert not is_plugin_name("bridge\n")
    assert validate_network_list({"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge\n"}]}).errors
    with pytest.raises(ConfigError):
        find_plugin("bridge\n", [str(tmp_path)])


@pytest.mark.parametrize("value, expected", [
    ("10.244.1.0/24", "10.244.1.0/24"),
    (" 10.244.1.0/24\n", "10.244.1.0/24"),
    ("10.244.0.0/255.255.0.0", "10.244.0.0/16"),
    ("fd00:10::/64", "fd00:10::/64"),
    ("0.0.0.0/0", "0.0.0.0/0"),
])
def test_cidrs(value, expected):
    assert str(_identifiers.check_cidr(value, "dst")) == expected


@pytest.mark.parametrize("value, message", [
    ("10.244.1.0", "must be a CIDR: a network address and a prefix length, such as 10.244.0.0/24"),
    (None, "must be a CIDR"),
    (167772160, "must be a CIDR"),
    ("10.244.1.0/33", "is not a CIDR: a network address and a prefix length, such as 10.244.0.0/24"),
    ("peer-2/24", "is not a CIDR"),
    ("10.244.1.7/24", "has host bits set: its network address is 10.244.1.0/24"),
    ("fd00:10::1/64", "has host bits set: its network address is fd00:10::/64"),
])
def test_not_cidrs_name_the_path_and_the_value(value, message):
    """One rule for cni_route's routes, the allocation's file and inventory and a member's
    record and options."""
    with pytest.raises(ConfigError) as info:
        _identifiers.check_cidr(value, "routes[0].dst")
    assert str(info.value).startswith(f"routes[0].dst: {message}") and str(info.value).endswith(f"(got {value!r})")


@pytest.mark.parametrize("value, expected", [("10.199.0.12", "10.199.0.12"), ("10.199.0.12 ", "10.199.0.12"),
                                             ("fd00::12", "fd00::12")])
def test_ip_addresses(value, expected):
    assert str(_identifiers.check_ip(value, "via")) == expected


@pytest.mark.parametrize("value", ["fleet-2", "10.199.0.300", "10.199.0.0/24", "", None, 167772160])
def test_not_ip_addresses_name_the_path_and_the_value(value):
    """An integer is no address here, though ipaddress would take one."""
    with pytest.raises(ConfigError) as info:
        _identifiers.check_ip(value, "routes[0].via")
    assert str(info.value) == f"routes[0].via: is not an IP address (got {value!r})"


def test_an_ip_address_error_carries_the_hint():
    with pytest.raises(ConfigError) as info:
        _identifiers.check_ip("node-a.example", "members.a.address", "routes go via an address, not a host name")
    assert str(info.value) == ("members.a.address: is not an IP address: routes go via an address, not a host name "
                               "(got 'node-a.example')")
