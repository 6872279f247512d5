# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rules that depend on the plugin release, on the host, or that the reference plugins leave to
the kernel; the string spellings of numbers and booleans; inputs that must not raise."""

from __future__ import annotations

import json
import string
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.cnikit.cni.plugins.module_utils._errors import PluginNotFoundError
from ansible_collections.cnikit.cni.plugins.module_utils._exec import find_plugin
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules._common import Releases
from ansible_collections.cnikit.cni.plugins.module_utils._validate import coerce_scalars, validate_network_list

OLD = ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]  # Debian 12's 1.1.1 and everything before v1.6.0
NEW = OLD + ["1.1.0"]
HL = {"type": "host-local", "subnet": "10.9.0.0/24"}


def net(*plugins, version="1.0.0"):
    return {"cniVersion": version, "name": "t", "plugins": list(plugins)}


def installed(versions, release=None):
    return {"installed_versions": lambda _t: versions, "installed_release": lambda _t: release}


def findings(conf, **kwargs):
    report = validate_network_list(conf, **kwargs)
    return [f.path for f in report.errors], [f.path for f in report.warnings]


# --- rules of a release: error when the binary is that release or newer, else a warning ----------

# (case, plugin, path of the finding, release that enforces it, the key older releases ignore)
RELEASE_RULES = [
    ("vlanTrunk order (v1.3.0)", {"type": "bridge", "vlanTrunk": [{"minID": 20, "maxID": 10}]}, "plugins[0].vlanTrunk[0]",
     "1.3.0", "vlanTrunk"),
    ("disableContainerInterface with IPAM (v1.4.1)", {"type": "bridge", "disableContainerInterface": True, "ipam": HL},
     "plugins[0].disableContainerInterface", "1.4.1", "disableContainerInterface"),
    ("ipMasqBackend value (v1.6.0)", {"type": "bridge", "ipMasq": True, "ipMasqBackend": "nft", "ipam": HL},
     "plugins[0].ipMasqBackend", "1.6.0", "ipMasqBackend"),
    ("portmap iptables conditions with nftables (v1.6.0)",
     {"type": "portmap", "backend": "nftables", "conditionsV6": ["-s", "fd00::/8"]}, "plugins[0].conditionsV6", "1.6.0", "backend"),
    ("portmap chain with nftables (v1.6.0)", {"type": "portmap", "backend": "nftables", "externalSetMarkChain": "X"},
     "plugins[0].externalSetMarkChain", "1.6.0", "backend"),
    ("sbr gateways of one family (unreleased)", {"type": "sbr", "gateways": ["10.0.0.1", "10.0.0.2"]}, "plugins[0].gateways",
     "99.0.0", "gateways"),
]


@pytest.mark.parametrize("case, plugin, path, release, key", RELEASE_RULES, ids=[r[0] for r in RELEASE_RULES])
def test_release_rules_follow_the_installed_release(case, plugin, path, release, key):
    del case
    errors, warnings = findings(net(plugin), **installed(NEW, release))
    assert path in errors
    errors, warnings = findings(net(plugin))  # no binary: a warning
    assert path not in errors and path in warnings
    errors, warnings = findings(net(plugin), **installed(OLD, "1.1.1"))  # predates the rule: the key is ignored
    assert path not in errors
    assert f"plugins[0].{key}" in warnings  # "... releases before vX ignore this key"


def test_a_release_straddling_the_rule_gives_a_warning():
    # Without a recorded release, a binary lacking spec 1.1.0 may be v1.0.0 to v1.5.1.
    errors, warnings = findings(net({"type": "bridge", "vlanTrunk": [{"minID": 20, "maxID": 10}]}), **installed(OLD))
    assert errors == [] and "plugins[0].vlanTrunk[0]" in warnings


def test_keys_the_installed_release_ignores_are_reported():
    report = validate_network_list(net({"type": "bridge", "portIsolation": True}), **installed(OLD, "1.1.1"))
    assert [w.message for w in report.warnings if w.path == "plugins[0].portIsolation"] == [
        "the installed bridge plugin is v1.1.1, and releases before v1.7.0 ignore this key"]


def test_firewall_ingress_policy_is_an_error_on_releases_that_have_it():
    conf = net({"type": "bridge", "ipam": HL}, {"type": "firewall", "ingressPolicy": "closed"})
    assert "plugins[1].ingressPolicy" in findings(conf, **installed(NEW + [], "1.1.1"))[0]


def test_portmap_nft_conditions_on_an_old_release_warn_about_iptables():
    conf = net({"type": "ptp", "ipam": HL}, {"type": "portmap", "capabilities": {"portMappings": True},
                                             "conditionsV4": ["ip", "saddr", "10.0.0.0/8"]})
    errors, warnings = findings(conf, **installed(OLD, "1.1.1"))
    assert errors == [] and "plugins[1].conditionsV4" in warnings
    assert "plugins[1].conditionsV4" in findings(conf, **installed(NEW, "1.6.0"))[0]


@pytest.mark.parametrize("release, low, high", [("1.1.1", (1, 1, 1), (1, 1, 2)), ("v1.6.2", (1, 6, 2), (1, 6, 3))])
def test_releases_from_a_recorded_version(release, low, high):
    releases = Releases.exactly(release)
    assert (releases.low, releases.high) == (low, high)


def test_releases_from_spec_versions():
    assert Releases.from_spec_versions(NEW).at_least("1.6.0")
    assert Releases.from_spec_versions(OLD).before("1.6.0")
    assert not Releases.from_spec_versions(OLD).at_least("1.1.0") and not Releases.from_spec_versions(OLD).before("1.1.0")


def test_a_finding_the_host_gives_is_marked_as_the_hosts():
    """The installed release, the other networks: cni_network warns of these on every run, and of
    the configuration's own findings only when it writes the file (of_host tells them apart)."""
    conf = net({"type": "bridge", "ipam": dict(HL, routes=[{"dst": "0.0.0.0/0"}])}, {"type": "tuning", "txQLen": 100})
    other = SimpleNamespace(name="t", source="/d/20-t.conflist", plugins=[])
    on_host = validate_network_list(conf, other_networks=[other], source="/d/10-t.conflist", **installed(OLD, "1.1.1"))
    assert {f.path: f.of_host for f in on_host.warnings} == {
        "plugins[0].ipam.subnet": False,  # the flat form: the configuration's
        "plugins[0].ipam.routes[0]": True,  # bridge v1.1.1's CHECK fails on a route without gw
        "plugins[1].txQLen": True,  # tuning v1.1.1 ignores the key
        "name": True,  # also the name of /d/20-t.conflist
    }
    assert [(f.path, f.of_host) for f in validate_network_list(conf).warnings] == [("plugins[0].ipam.subnet", False)]


@pytest.mark.parametrize("probed", [False, True], ids=["not probed", "probed"])
def test_a_release_rule_is_the_hosts_once_a_binary_is_probed(probed):
    """v1.3.0 refuses the trunk: an error of the host with that release installed, a warning of
    the configuration while no binary was probed."""
    conf = net({"type": "bridge", "vlanTrunk": [{"minID": 20, "maxID": 10}]})
    report = validate_network_list(conf, **(installed(NEW, "1.3.0") if probed else {}))
    [finding] = report.errors if probed else report.warnings
    assert finding.path == "plugins[0].vlanTrunk[0]" and finding.of_host is probed


# --- what the plugins or the kernel refuse -------------------------------------------------------

KERNEL_RULES = [
    ("ptp static without gateway", net({"type": "ptp", "ipam": {"type": "static", "addresses": [{"address": "10.9.0.5/24"}]}}),
     "plugins[0].ipam.addresses[0].gateway"),
    ("static without addresses", net({"type": "bridge", "ipam": {"type": "static"}}), "plugins[0].ipam.addresses"),
    ("range of only the gateway", net({"type": "bridge", "ipam": dict(HL, rangeStart="10.9.0.1", rangeEnd="10.9.0.1")}),
     "plugins[0].ipam"),
    ("route dst with host bits", net({"type": "bridge", "ipam": dict(HL, routes=[{"dst": "10.8.0.5/16"}])}),
     "plugins[0].ipam.routes[0].dst"),
    ("route gw outside every subnet", net({"type": "bridge", "ipam": dict(HL, routes=[{"dst": "10.8.0.0/16", "gw": "10.7.0.1"}])}),
     "plugins[0].ipam.routes[0].gw"),
    ("route through a gateway outside the subnet",
     net({"type": "bridge", "ipam": dict(HL, gateway="10.7.0.1", routes=[{"dst": "0.0.0.0/0"}])}), "plugins[0].ipam.routes[0]"),
    ("MTU above 65535", net({"type": "bridge", "mtu": 65536}), "plugins[0].mtu"),
    ("MTU below 68", net({"type": "ptp", "mtu": 67, "ipam": HL}), "plugins[0].mtu"),
    ("tuning multicast MAC", net({"type": "ptp", "ipam": HL}, {"type": "tuning", "mac": "01:00:5e:00:00:01"}), "plugins[1].mac"),
    ("tuning args.cni.sysctl without sysctl", net({"type": "ptp", "ipam": HL}, {"type": "tuning", "args": {"cni": {"sysctl": {}}}}),
     "plugins[1].args.cni.sysctl"),
    ("bandwidth rate below 8 bits", net({"type": "ptp", "ipam": HL}, {"type": "bandwidth", "ingressRate": 7, "ingressBurst": 800}),
     "plugins[1].ingressRate"),
    ("two interface creators", net({"type": "bridge", "ipam": HL}, {"type": "ptp", "ipam": HL}), "plugins[1].type"),
]


@pytest.mark.parametrize("case, conf, path", KERNEL_RULES, ids=[r[0] for r in KERNEL_RULES])
def test_what_the_plugins_or_the_kernel_refuse(case, conf, path):
    del case
    assert path in findings(conf)[0]


WORKING = [
    ("static with ips capability", net({"type": "bridge", "capabilities": {"ips": True}, "ipam": {"type": "static"}})),
    ("route via the range's gateway", net({"type": "bridge", "ipam": dict(HL, routes=[{"dst": "0.0.0.0/0"}])})),
    ("routes with ipRanges at runtime", net({
        "type": "bridge", "capabilities": {"ipRanges": True},
        "ipam": {"type": "host-local", "routes": [{"dst": "0.0.0.0/0", "gw": "10.7.0.1"}]}})),
    ("range of two beside the gateway", net({"type": "bridge", "ipam": dict(HL, rangeStart="10.9.0.1", rangeEnd="10.9.0.2")})),
    ("ipvlan chained after ptp", net({"type": "ptp", "ipam": HL}, {"type": "ipvlan", "master": "eth0"})),
    ("calico's usePodCidr", net({"type": "calico", "ipam": {"type": "host-local", "subnet": "usePodCidr"}})),
    ("firewall backend empty", net({"type": "bridge", "ipam": HL}, {"type": "firewall", "backend": ""})),
]


@pytest.mark.parametrize("case, conf", WORKING, ids=[w[0] for w in WORKING])
def test_working_configurations_have_no_error(case, conf):
    del case
    assert findings(conf)[0] == []


def test_third_party_ipam_findings_are_warnings():
    conf = net({"type": "calico", "ipam": {"type": "host-local", "subnet": "10.9.0.5/24"}})
    errors, warnings = findings(conf)
    assert errors == [] and "plugins[0].ipam.subnet" in warnings


def test_sysctl_the_kernel_lacks_is_an_error_on_the_host_only():
    conf = net({"type": "ptp", "ipam": HL}, {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.no_such_knob": "1",
                                                                          "net.ipv4.conf.IFNAME.arp_filter": "1"}})
    assert findings(conf)[0] == []
    assert findings(conf, **installed(OLD))[0] == ['plugins[1].sysctl["net.ipv4.conf.IFNAME.no_such_knob"]']


# --- strings spelling numbers and booleans (ansible-core < 2.19 templates them so) ----------------

def test_string_spellings_are_converted_where_the_schema_wants_them():
    conf = net({"type": "bridge", "mtu": "9000", "isGateway": "yes", "bridge": "1500", "vlanTrunk": [{"id": "5"}],
                "ipam": {"type": "host-local", "subnet": "10.9.0.0/24", "routes": [{"dst": "0.0.0.0/0", "priority": "10"}]}},
               {"type": "flannel", "mtu": "1450"})
    conf["disableCheck"] = "False"
    converted = coerce_scalars(conf)
    bridge = converted["plugins"][0]
    assert (bridge["mtu"], bridge["isGateway"], bridge["bridge"], bridge["vlanTrunk"]) == (9000, True, "1500", [{"id": 5}])
    assert bridge["ipam"]["routes"][0]["priority"] == 10
    assert converted["plugins"][1]["mtu"] == "1450"  # a third-party plugin's keys are unknown
    assert converted["disableCheck"] is False
    assert conf["plugins"][0]["mtu"] == "9000"  # the input is not modified


@pytest.mark.parametrize("value", ["9000.5", "nine", "1e3", ""])
def test_other_strings_still_fail_naming_the_field(value):
    converted = coerce_scalars(net({"type": "bridge", "mtu": value}))
    assert "plugins[0].mtu" in findings(converted)[0]


# --- no input makes the validator raise ------------------------------------------------------------

PATHS = st.text(alphabet=string.printable + "\0é/", max_size=40)
TYPES = st.one_of(st.sampled_from(["bridge", "host-local", "../host-local", "..", ".", "a/b", "\\x", "", "tuning"]), PATHS,
                  st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2))


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bin")
    return str(directory)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plugin_type=TYPES, ipam_type=TYPES, path=PATHS)
def test_types_and_paths_never_raise(plugin_dir, plugin_type, ipam_type, path):
    def versions(name):
        find_plugin(name, [plugin_dir])  # the real lookup: a path-like name must not escape or raise
        return NEW

    conf = net({"type": plugin_type, "master": path, "mtu": 1500, "bridge": path, "kernelpath": path,
                "sysctl": {path: "1"}, "ipam": {"type": ipam_type, "dataDir": path, "resolvConf": path}},
               {"type": "tuning", "sysctl": {path: "1", f"net.{path}": "1"}})
    report = validate_network_list(conf, installed_versions=versions, installed_release=lambda _t: path)
    json.dumps(report.to_dict(), default=str)


def test_ipam_type_naming_a_path_is_reported_with_binary_checks(plugin_dir):
    def versions(name):
        find_plugin(name, [plugin_dir])
        return NEW

    conf = net({"type": "bridge", "ipam": {"type": "../host-local", "subnet": "10.9.0.0/24"}})
    errors = findings(conf, installed_versions=versions)[0]
    assert "plugins[0].ipam.type" in errors


def test_a_missing_plugin_is_an_error_naming_the_type(plugin_dir):
    def versions(name):
        return [find_plugin(name, [plugin_dir])]

    report = validate_network_list(net({"type": "bridge"}), installed_versions=versions)
    assert [(f.path, f.value) for f in report.errors] == [("plugins[0].type", "bridge")]
    assert str(PluginNotFoundError("bridge", [plugin_dir])) in report.errors[0].message


def test_a_route_without_gw_warns_of_bridge_releases_whose_check_fails_on_it():
    routed = {"type": "bridge", "ipam": dict(HL, routes=[{"dst": "10.10.0.0/16"}, {"dst": "10.11.0.0/16", "gw": "10.9.0.1"}])}
    for release, versions in (("1.1.1", OLD), (None, OLD)):
        errors, warnings = findings(net(routed), **installed(versions, release))
        assert errors == [] and warnings.count("plugins[0].ipam.routes[0]") == 1
        assert "plugins[0].ipam.routes[1]" not in warnings
    for release, versions in (("1.3.0", OLD), (None, NEW)):
        assert "plugins[0].ipam.routes[0]" not in findings(net(routed), **installed(versions, release))[1]
    assert "plugins[0].ipam.routes[0]" not in findings(net(routed))[1]  # no binary probed: nothing to say
