# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The schemas themselves: valid JSON Schema, complete, and using only formats we check."""

from __future__ import annotations

import jsonschema
import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules.registry import IPAM, IPAM_SCHEMAS, PLUGIN_SCHEMAS, PLUGINS
from ansible_collections.cnikit.cni.plugins.module_utils._schemas import FORMATS
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules._common import FORMAT_CHECKS
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import names

REFERENCE_PLUGINS = ("bridge", "ipvlan", "macvlan", "ptp", "host-device", "vlan", "loopback", "dummy", "tap",
                     "vrf", "tuning", "portmap", "bandwidth", "firewall", "sbr")
ALL_SCHEMAS = sorted(PLUGIN_SCHEMAS.items()) + sorted(IPAM_SCHEMAS.items())
# The draft the validator uses: 2020-12, or 7 with jsonschema before 4.0 (the floor is 3.2).
NEWEST_DRAFT = getattr(jsonschema, "Draft202012Validator", jsonschema.Draft7Validator)


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_every_reference_plugin_and_ipam_type_has_a_schema():
    assert sorted(PLUGIN_SCHEMAS) == sorted(REFERENCE_PLUGINS)
    assert sorted(IPAM_SCHEMAS) == ["dhcp", "host-local", "static"]


def test_the_installers_names_are_the_registrys():
    """The installer reads the names from names.py, not from the registry (which imports every
    plugin's rules): the two must list the same plugins."""
    assert names.REFERENCE_PLUGINS == frozenset(PLUGINS) | frozenset(IPAM)


def test_the_engines_withheld_check_types_are_the_rules():
    """The engine asks the rules for the defects that withhold CHECK only of these types."""
    rules = dict(PLUGINS, **IPAM)
    assert names.WITHHELD_CHECK_TYPES == {t for t, r in rules.items() if any(d.withheld for d in r.check_defects)}


@pytest.mark.parametrize("name, schema", ALL_SCHEMAS, ids=[n for n, _s in ALL_SCHEMAS])
def test_schema_is_valid_json_schema(name, schema):
    NEWEST_DRAFT.check_schema(schema)


@pytest.mark.parametrize("name, schema", ALL_SCHEMAS, ids=[n for n, _s in ALL_SCHEMAS])
def test_formats_are_known_and_checked(name, schema):
    used = {node["format"] for node in walk(schema) if isinstance(node.get("format"), str)}
    assert used <= set(FORMATS) == set(FORMAT_CHECKS)


@pytest.mark.parametrize("name, rules", sorted({**PLUGINS, **IPAM}.items()), ids=sorted({**PLUGINS, **IPAM}))
def test_release_tables_name_keys_of_the_schema(name, rules):
    assert set(rules.added_in) | set(rules.removed_in) <= set(rules.schema["properties"]), name


@pytest.mark.parametrize("fmt, good, bad", [
    ("cidr", ["10.0.0.0/8", "fd00::/64", "10.1.2.5/24"], ["10.0.0.0", "10.0.0.0/33", "10.00.0.0/8", "10.0.0.0/08", "x/8"]),
    ("ip", ["10.0.0.1", "fd00::1", "::ffff:10.0.0.1"], ["10.0.0.01", "fe80::1%eth0", "10.0.0.256", ""]),
    ("mac", ["0a:58:0a:01:00:05", "0A-58-0A-01-00-05", "0a58.0a01.0005", "00:00:00:00:fe:80:00:00"],
     ["0a:58:0a:01:00", "0a:58-0a:01:00:05", "0a:58:0a:01:00:0g"]),
    ("ifname", ["eth0", "cni-podman0", "a" * 15], ["a" * 16, "br/0", "br 0", ".", ""]),
    ("dhcp-option", ["routers", "0", "255"], ["256", "hostname", "-1"]),
])
def test_format_checks(fmt, good, bad):
    check = FORMAT_CHECKS[fmt]
    assert all(check(v) for v in good)
    assert not any(check(v) for v in bad)
