# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Versions and result conversion (_result): libcni's selection rules and the spec's
conversion rules, checked with golden results for every version pair."""

from __future__ import annotations

import copy
import itertools

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._result import (
    KNOWN_VERSIONS, ResultError, convert, select_version, summarise, supports, version_key)

# cni-runtime.md §9.2: one result in three versions.
GOLDEN_110 = {
    "cniVersion": "1.1.0",
    "interfaces": [{"name": "cni0", "mac": "0a:58:0a:16:00:01"},
                   {"name": "veth1a2b3c4d", "mac": "3e:1f:aa:bb:cc:dd"},
                   {"name": "eth0", "mac": "86:55:0a:16:00:05", "sandbox": "/run/netns/ns1", "mtu": 1500}],
    "ips": [{"interface": 2, "address": "10.22.0.5/16", "gateway": "10.22.0.1"}],
    "routes": [{"dst": "0.0.0.0/0", "gw": "10.22.0.1"}],
    "dns": {"nameservers": ["10.22.0.1"]},
}
GOLDEN_040 = {
    "cniVersion": "0.4.0",
    "interfaces": [{"name": "cni0", "mac": "0a:58:0a:16:00:01"},
                   {"name": "veth1a2b3c4d", "mac": "3e:1f:aa:bb:cc:dd"},
                   {"name": "eth0", "mac": "86:55:0a:16:00:05", "sandbox": "/run/netns/ns1"}],
    "ips": [{"version": "4", "interface": 2, "address": "10.22.0.5/16", "gateway": "10.22.0.1"}],
    "routes": [{"dst": "0.0.0.0/0", "gw": "10.22.0.1"}],
    "dns": {"nameservers": ["10.22.0.1"]},
}
GOLDEN_020 = {
    "cniVersion": "0.2.0",
    "ip4": {"ip": "10.22.0.5/16", "gateway": "10.22.0.1", "routes": [{"dst": "0.0.0.0/0", "gw": "10.22.0.1"}]},
    "dns": {"nameservers": ["10.22.0.1"]},
}
# What a legacy result becomes in the richer formats: no interfaces, no interface index.
FROM_LEGACY_040 = {
    "cniVersion": "0.4.0",
    "ips": [{"version": "4", "address": "10.22.0.5/16", "gateway": "10.22.0.1"}],
    "routes": [{"dst": "0.0.0.0/0", "gw": "10.22.0.1"}],
    "dns": {"nameservers": ["10.22.0.1"]},
}

LEGACY_VERSIONS = ("0.1.0", "0.2.0")
V04_VERSIONS = ("0.3.0", "0.3.1", "0.4.0")
V1_VERSIONS = ("1.0.0", "1.1.0")


def _at(result: dict, version: str) -> dict:
    return dict(copy.deepcopy(result), cniVersion=version)


def _without_ip_version(result: dict) -> dict:
    result = copy.deepcopy(result)
    for ip in result.get("ips", []):
        ip.pop("version", None)
    return result


def _source(version: str) -> dict:
    """The golden result written at ``version``."""
    if version in LEGACY_VERSIONS:
        return _at(GOLDEN_020, version)
    if version in V04_VERSIONS:
        return _at(GOLDEN_040, version)
    return _at(GOLDEN_110, version) if version == "1.1.0" else _at(_without_mtu(GOLDEN_110), version)


def _without_mtu(result: dict) -> dict:
    result = copy.deepcopy(result)
    for interface in result["interfaces"]:
        interface.pop("mtu", None)
    return result


def _expected(source: str, target: str) -> dict:
    if target in LEGACY_VERSIONS:
        return _at(GOLDEN_020, target)
    rich = FROM_LEGACY_040 if source in LEGACY_VERSIONS else GOLDEN_040
    if target in V04_VERSIONS:
        return _at(rich, target)
    if source == "1.1.0" and target == "1.1.0":
        return _at(GOLDEN_110, target)
    return _at(_without_ip_version(rich), target)


@pytest.mark.parametrize("source, target", list(itertools.product(KNOWN_VERSIONS, KNOWN_VERSIONS)))
def test_conversion_vectors_for_every_version_pair(source, target):
    assert convert(_source(source), target) == _expected(source, target)


def test_golden_downgrades_from_the_spec_examples():
    assert convert(GOLDEN_110, "0.4.0") == GOLDEN_040
    assert convert(GOLDEN_110, "0.2.0") == GOLDEN_020
    assert convert(GOLDEN_040, "1.1.0") == _at(_without_ip_version(GOLDEN_040), "1.1.0")


def test_conversion_leaves_its_input_alone():
    source = copy.deepcopy(GOLDEN_110)
    convert(source, "0.2.0")
    convert(source, "0.4.0")
    assert source == GOLDEN_110


def test_downgrade_to_legacy_keeps_the_first_address_of_each_family_and_their_routes():
    result = {
        "cniVersion": "1.0.0",
        "ips": [{"address": "10.0.0.2/24", "gateway": "10.0.0.1"}, {"address": "10.0.1.2/24"},
                {"address": "fd00::2/64"}, {"address": "fd00:1::2/64", "gateway": "fd00:1::1"}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1", "mtu": 1400}, {"dst": "::/0"},
                   {"dst": "192.168.0.0/16"}],
    }
    assert convert(result, "0.1.0") == {
        "cniVersion": "0.1.0",
        "ip4": {"ip": "10.0.0.2/24", "gateway": "10.0.0.1",
                "routes": [{"dst": "0.0.0.0/0", "gw": "10.0.0.1"}, {"dst": "192.168.0.0/16"}]},
        "ip6": {"ip": "fd00::2/64", "routes": [{"dst": "::/0"}]},
    }


def test_downgrade_drops_routes_of_a_family_without_address():
    result = {"cniVersion": "0.4.0", "ips": [{"version": "6", "address": "fd00::2/64"}],
              "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "fd00::1"}]}
    assert convert(result, "0.2.0") == {"cniVersion": "0.2.0",
                                        "ip6": {"ip": "fd00::2/64", "routes": [{"dst": "::/0", "gw": "fd00::1"}]}}


@pytest.mark.parametrize("ips", [None, []])
def test_downgrade_without_addresses_fails_clearly(ips):
    result = {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0"}]}
    if ips is not None:
        result["ips"] = ips
    with pytest.raises(ResultError, match="cannot convert to a 0.1.0/0.2.0 result: no valid IP addresses"):
        convert(result, "0.2.0")


def test_legacy_upgrade_puts_ip4_before_ip6_and_concatenates_routes():
    legacy = {"cniVersion": "0.2.0",
              "ip4": {"ip": "10.0.0.2/24", "routes": [{"dst": "0.0.0.0/0"}]},
              "ip6": {"ip": "fd00::2/64", "gateway": "fd00::1", "routes": [{"dst": "::/0"}]}}
    assert convert(legacy, "1.0.0") == {
        "cniVersion": "1.0.0",
        "ips": [{"address": "10.0.0.2/24"}, {"address": "fd00::2/64", "gateway": "fd00::1"}],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}],
    }


def test_result_without_version_is_a_0_1_0_result():
    assert convert({"ip4": {"ip": "10.0.0.2/24"}}, "0.3.1") == {
        "cniVersion": "0.3.1", "ips": [{"version": "4", "address": "10.0.0.2/24"}], "routes": []}


def test_downgrade_to_0_4_0_adds_ip_version_by_family_and_keeps_route_extras():
    result = {"cniVersion": "1.1.0",
              "interfaces": [{"name": "eth0", "mtu": 9000, "socketPath": "/s", "pciID": "0000:01:00.0"}],
              "ips": [{"address": "fd00::5/64"}, {"address": "10.0.0.5/24"}],
              "routes": [{"dst": "0.0.0.0/0", "mtu": 1400, "table": 100, "scope": 0}]}
    assert convert(result, "0.4.0") == {
        "cniVersion": "0.4.0", "interfaces": [{"name": "eth0"}],
        "ips": [{"address": "fd00::5/64", "version": "6"}, {"address": "10.0.0.5/24", "version": "4"}],
        "routes": [{"dst": "0.0.0.0/0", "mtu": 1400, "table": 100, "scope": 0}]}


def test_wrong_ip_version_is_corrected_from_the_address():
    result = {"cniVersion": "0.3.1", "ips": [{"version": "6", "address": "10.0.0.5/24"}]}
    assert convert(result, "0.4.0")["ips"] == [{"version": "4", "address": "10.0.0.5/24"}]


@pytest.mark.parametrize("result, target, path", [
    ({"cniVersion": "0.5.0"}, "1.0.0", "cniVersion"),
    ({"cniVersion": "1.0.0"}, "2.0.0", "cniVersion"),
    ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.300/24"}]}, "0.4.0", "ips[].address"),
    ({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.3"}], "routes": [{"gw": "x"}]}, "0.2.0", "routes[].dst"),
    (["not", "a", "dict"], "1.0.0", "result"),
])
def test_unconvertible_results_raise_result_errors_naming_the_field(result, target, path):
    with pytest.raises(ResultError) as info:
        convert(result, target)
    assert info.value.path == path


# -- versions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version, key", [
    ("", (0, 1, 0)), ("1", (1, 0, 0)), ("1.1", (1, 1, 0)), ("0.4.0", (0, 4, 0)), ("0.10.2", (0, 10, 2)),
])
def test_version_key(version, key):
    assert version_key(version) == key


@pytest.mark.parametrize("version", ["1.0.f", "1.0.0.0", "1.0.0-rc1", "v1.0.0", "1..0", "latest"])
def test_version_key_rejects_what_libcni_cannot_parse(version):
    with pytest.raises(ConfigError, match="is not a version"):
        version_key(version)


@pytest.mark.parametrize("version, minimum, expected", [
    ("0.4.0", "0.4.0", True), ("1.0.0", "0.4.0", True), ("0.3.1", "0.4.0", False),
    ("", "0.4.0", False), ("0.10.0", "0.4.0", True), ("1.1.0", "1.1.0", True), ("1.0.0", "1.1.0", False),
])
def test_supports(version, minimum, expected):
    assert supports(version, minimum) is expected


# libcni's conf_test.go "cniVersions" table (cni-runtime.md §6) and ours.
@pytest.mark.parametrize("cni_version, cni_versions, expected", [
    ("1.0.0", None, "1.0.0"),                      # no cniVersions: cniVersion verbatim
    ("1.2.3", None, "1.2.3"),                      # ... even a version newer than ours
    ("", None, ""),
    ("1.0.0", [], "1.0.0"),                        # an empty list counts as absent
    ("0.4.0", ["1.0.0", "1.1.0"], "1.1.0"),        # the highest
    ("1.1.0", ["0.4.0", "1.0.0"], "1.1.0"),        # cniVersion takes part
    ("1.0.0", ["1.1.0", "1.2.0", "2.0.0"], "1.1.0"),  # newer than 1.1.0: ignored
    ("1.0.0", ["2.0.0"], "1.0.0"),
    ("3.0.0", ["2.0.0"], "3.0.0"),                 # nothing usable: cniVersion as given
    ("", ["0.3.1", "0.4.0"], "0.4.0"),
    ("0.3.1", ["0.10.0", "0.9.0"], "0.10.0"),      # numeric, not string, order
])
def test_select_version(cni_version, cni_versions, expected):
    assert select_version(cni_version, cni_versions) == expected


ALL = list(KNOWN_VERSIONS)
UP_TO_100 = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]  # Debian's plugins 1.1.1


@pytest.mark.parametrize("cni_version, cni_versions, plugin_versions, expected", [
    ("1.1.0", ["1.0.0"], [ALL, UP_TO_100], "1.0.0"),        # one older binary narrows the choice
    ("1.1.0", ["1.0.0"], [ALL, ALL], "1.1.0"),
    ("1.1.0", ["0.4.0", "1.0.0"], [["0.4.0"], UP_TO_100], "0.4.0"),
    ("1.1.0", ["1.0.0"], [["0.3.1"]], "1.1.0"),             # nothing in common: declared version
    ("1.1.0", ["1.0.0"], [], "1.1.0"),                      # no plugins: no narrowing
])
def test_select_version_narrowed_by_probed_plugins(cni_version, cni_versions, plugin_versions, expected):
    assert select_version(cni_version, cni_versions, plugin_versions) == expected


def test_summarise_lists_sandbox_interfaces_addresses_and_mac():
    assert summarise(GOLDEN_110) == {"interfaces": ["eth0"], "ips": ["10.22.0.5/16"], "mac": "86:55:0a:16:00:05"}
    assert summarise(GOLDEN_020) == {"interfaces": [], "ips": ["10.22.0.5/16"], "mac": None}


@pytest.mark.parametrize("damaged", [{"ips": "10.0.0.2/24"}, {"ips": ["10.0.0.2/24"], "interfaces": "eth0"},
                                     {"interfaces": [None, 7]}])
def test_summarise_skips_parts_of_the_wrong_shape(damaged):
    assert summarise(dict(damaged, cniVersion="1.0.0")) == {"interfaces": [], "ips": [], "mac": None}
