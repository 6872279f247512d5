# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A replace never leaves a workload without its network, against Debian's plugin binaries:
a subnet change the bridge plugin would refuse is refused before anything is removed (in check
mode too), and a replace whose new ADD fails anyway puts the attachment back as it was."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import releases

PLUGIN_DIR = releases.PLUGIN_DIR
if os.geteuid() != 0 or not os.access(os.path.join(PLUGIN_DIR, "bridge"), os.X_OK):
    pytest.skip(f"needs root and the plugin binaries in {PLUGIN_DIR}", allow_module_level=True)

# pylint: disable=wrong-import-position
from fakeplugin import FakePlugins
from hostclean import delete_cached
from ansible_collections.cnikit.cni.plugins.module_utils import _attach
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError

NETWORK = "cnit-e-roll"


def _addresses(netns: str) -> list:
    done = subprocess.run(["ip", "-j", "-n", os.path.basename(netns), "-4", "addr", "show", "dev", "eth0"],
                          capture_output=True, text=True, check=False)
    links = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else []
    return [f"{a['local']}/{a['prefixlen']}" for link in links for a in link["addr_info"]]


def _network(bridge: str, subnet: str, data_dir: str, extra_plugins=(), **bridge_options):
    bridge_plugin = {"type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "subnet": subnet, "dataDir": data_dir}, **bridge_options}
    return parse_network_list({"cniVersion": "1.0.0", "name": NETWORK, "plugins": [bridge_plugin, *extra_plugins]})


@pytest.fixture
def rolled(tmp_path, make_netns, bridge_name, subnet):
    """Two namespaces attached to a gateway bridge on ``subnet``; returns what a test needs to
    change the network: (converge(network, netns, check_mode), namespaces, old subnet, engine)."""
    fake = FakePlugins(tmp_path / "fake")
    fake.install("cnit-e-fail", ADD={"error": {"code": 999, "msg": "refusing on purpose"}})
    engine = Engine([PLUGIN_DIR, fake.directory], str(tmp_path / "cache"), timeout=30)
    data_dir = str(tmp_path / "ipam")
    namespaces = [make_netns(), make_netns()]

    def converge(network, netns, check_mode=False):
        desired = _attach.Desired(lambda: network, Attachment(NETWORK, f"c-{os.path.basename(netns)}", netns))
        return _attach.converge(engine, desired, check_mode)

    def network(new_subnet, *extra, **options):
        return _network(bridge_name, new_subnet, data_dir, extra, **options)

    for netns in namespaces:
        assert converge(network(subnet), netns).action == "added"
    yield converge, network, namespaces, subnet
    delete_cached(engine)


def _other_subnet(subnet: str) -> str:
    third = int(subnet.split(".")[2])
    return f"10.251.{third}.0/24"


def test_a_subnet_change_the_bridge_would_refuse_is_refused_before_anything_is_removed(rolled):
    converge, network, namespaces, subnet = rolled
    before = [_addresses(netns) for netns in namespaces]
    changed = network(_other_subnet(subnet))

    for check_mode in (True, False):
        with pytest.raises(CNIError, match="forceAddress") as caught:
            converge(changed, namespaces[0], check_mode=check_mode)
        assert "nothing was changed" in str(caught.value)
        assert [_addresses(netns) for netns in namespaces] == before

    # The way out the error names works: with forceAddress the bridge takes the new gateway.
    forced = network(_other_subnet(subnet), forceAddress=True)
    for netns in namespaces:
        assert converge(forced, netns, check_mode=True).action == "replaced"
        outcome = converge(forced, netns)
        assert outcome.action == "replaced"
        assert _addresses(netns)[0].startswith(_other_subnet(subnet).rsplit(".", 1)[0] + ".")
        assert converge(forced, netns).action == "unchanged"


def test_a_replace_whose_add_fails_puts_the_attachment_back_as_it_was(rolled):
    converge, network, namespaces, subnet = rolled
    before = _addresses(namespaces[0])
    failing = network(subnet, {"type": "cnit-e-fail"}, ipMasq=False, hairpinMode=True)

    with pytest.raises(CNIError) as caught:
        converge(failing, namespaces[0])
    message = str(caught.value)
    assert "refusing on purpose" in message
    assert "put back as it was" in message and before[0] in message
    assert _addresses(namespaces[0]) == before
    # The attachment is the old one again: declared as before, it is unchanged and healthy.
    assert converge(network(subnet), namespaces[0]).action == "unchanged"
