# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A failed ADD at every position of a bridge + host-local + tuning + portmap chain is rolled
back completely, and a plugin that hangs, dies, prints garbage or prints nothing gives a clear
error and leaves nothing behind."""

from __future__ import annotations

import os
import time

import pytest
from conftest import PREFIX, addresses_in, link_names, run
from fakeplugin import FakePlugins

from ansible_collections.cnikit.cni.plugins.module_utils import _attach, _cache
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine
from ansible_collections.cnikit.cni.plugins.module_utils._errors import OperationError

TUNING = {"type": "tuning", "mtu": 1400, "sysctl": {"net.ipv4.conf.eth0.rp_filter": "0"}}
PORTMAP = {"type": "portmap", "capabilities": {"portMappings": True}, "snat": False}
FAIL = {"type": "fail"}
OTHER_OWNER = "someone-else"


def chain(host, tuning=None, fail_at=None, **conflist_args) -> dict:
    plugins = [dict(tuning or TUNING), dict(PORTMAP)]
    if fail_at is not None:
        plugins.insert(fail_at - 1, dict(FAIL))  # position 0 is the bridge
    return host.conflist(f"{PREFIX}chain{host.index}", plugins, subnet=f"10.247.{host.index}.0/24", **conflist_args)


def attachment(host, name="c1", port=None) -> Attachment:
    port = port or 20000 + host.index
    return Attachment(f"{PREFIX}chain{host.index}", f"{PREFIX}{name}", host.netns(name), "eth0",
                      capability_args={"portMappings": [{"hostPort": port, "containerPort": 80, "protocol": "tcp"}]})


def fault_bridge(host):
    # A link of another kind under the bridge's name: bridge fails before creating anything.
    run("ip", "link", "add", host.bridge, "type", "veth", "peer", "name", f"{PREFIX}p{host.index}")
    return chain(host), "bridge"


def fault_host_local(host):
    # A one-address range whose only address belongs to another container: IPAM runs out
    # after the bridge created the veth.
    conf = chain(host, ipam_extra={"rangeStart": f"10.247.{host.index}.10", "rangeEnd": f"10.247.{host.index}.10"})
    ipam_dir = os.path.join(host.data_dir, conf["name"])
    os.makedirs(ipam_dir)
    with open(os.path.join(ipam_dir, f"10.247.{host.index}.10"), "w", encoding="utf-8") as handle:
        handle.write(f"{OTHER_OWNER}\r\neth0")
    return conf, "bridge"


def fault_tuning(host):
    return chain(host, tuning={"type": "tuning", "sysctl": {"net.ipv4.conf.eth0.no_such_key": "1"}}), "tuning"


def fault_portmap(host):
    return chain(host), "portmap"  # the test gives it host port 70000, which iptables refuses


def fault_cache_write(host):
    # A file where the results directory belongs: every plugin succeeds, the cache write fails.
    os.makedirs(host.cache_dir)
    with open(os.path.join(host.cache_dir, _cache.RESULTS_SUBDIR), "w", encoding="utf-8") as handle:
        handle.write("a file where the results directory belongs")
    return chain(host), None


def fake_at(position):
    def fault(host):
        FakePlugins(host.fake_dir).install("fail", ADD={"error": {"code": 11, "msg": "injected failure"}})
        return chain(host, fail_at=position), "fail"
    fault.__name__ = f"fault_fake_after_position_{position - 1}"
    return fault


FAULTS = {
    "bridge": fault_bridge,
    "host-local (inside bridge)": fault_host_local,
    "fake after bridge": fake_at(1),
    "tuning": fault_tuning,
    "fake after tuning": fake_at(2),
    "portmap": fault_portmap,
    "fake after portmap": fake_at(3),
    "result cache write": fault_cache_write,
}


@pytest.mark.parametrize("position", list(FAULTS))
def test_failure_at_every_position_is_rolled_back(host, position):
    conf, failing_plugin = FAULTS[position](host)
    network = parse_network_list(conf)
    item = attachment(host, port=70000 if position == "portmap" else None)
    engine = Engine(host.cni_path, host.cache_dir, timeout=20)

    with pytest.raises(OperationError) as caught:
        engine.add(network, item)

    assert "rolled back" in str(caught.value)
    assert not caught.value.cleanup_errors, caught.value.cleanup_errors
    if failing_plugin is not None:
        assert caught.value.cause.plugin == failing_plugin
    if position == "result cache write":
        _remove_results_blocker(host)
    host.assert_clean(network.name, [item.container_id], [item.netns])
    if position.startswith("host-local"):
        assert host.reservations(network.name) == {f"10.247.{host.index}.10": OTHER_OWNER}
        return
    if position == "bridge":
        run("ip", "link", "del", host.bridge)
    # Without the fault the same declaration converges, and a DEL leaves nothing.
    fixed = parse_network_list(chain(host))
    desired = _attach.Desired(lambda: fixed, attachment_with_port(item, 20000 + host.index))
    outcome = _attach.converge(engine, desired)
    assert outcome.action == "added"
    assert len(addresses_in(item.netns)) == 1
    engine.delete(fixed, desired.attachment)
    host.assert_clean(fixed.name, [item.container_id], [item.netns])


def attachment_with_port(item: Attachment, port: int) -> Attachment:
    return Attachment(item.network, item.container_id, item.netns, item.ifname,
                      capability_args={"portMappings": [{"hostPort": port, "containerPort": 80, "protocol": "tcp"}]})


def _remove_results_blocker(host):
    os.unlink(os.path.join(host.cache_dir, _cache.RESULTS_SUBDIR))


# -- misbehaving plugins in the middle of a real chain ------------------------------------------

MISBEHAVIOURS = {
    "hangs (timeout)": ({"sleep": 60}, "timed out after 1s and was killed"),
    "hangs and ignores SIGTERM": ({"sleep": 60, "ignore_sigterm": True}, "timed out after 1s and was killed"),
    "hangs in a forked child holding stdout": ({"fork_sleep": 60}, "timed out after 1s and was killed"),
    "killed by SIGSEGV": ({"signal": "SIGSEGV"}, "killed by signal SIGSEGV"),
    "killed by SIGABRT": ({"signal": "SIGABRT"}, "killed by signal SIGABRT"),
    "killed by SIGTERM": ({"signal": "SIGTERM"}, "killed by signal SIGTERM"),
    "prints garbage, exit 0": ({"stdout": "\x00\xffnot json{"}, "printed no JSON result"),
    "prints garbage, exit 1": ({"stdout": "panic: runtime error", "exit": 1},
                               "printed output that is not a CNI error: panic: runtime error"),
    "prints nothing, exit 0": ({"stdout": ""}, "printed no JSON result"),
    "prints nothing, exit 2": ({"stdout": "", "exit": 2}, "failed with no error message (exit status 2)"),
    "prints a JSON list": ({"stdout": "[1, 2]"}, "printed no JSON result"),
    "prints a result of an unknown version": ({"result": {"cniVersion": "9.9.9"}}, "unknown version"),
    "prints a result whose ips is a string": ({"result": {"cniVersion": "1.0.0", "ips": "10.0.0.2/24"}},
                                              "ips: must be a list"),
    "prints a result whose interfaces hold a number": ({"result": {"cniVersion": "1.0.0", "interfaces": [7]}},
                                                       "interfaces[0]: must be an object"),
}


@pytest.mark.parametrize("behaviour", list(MISBEHAVIOURS))
def test_misbehaving_plugin_gives_a_clear_error_and_leaks_nothing(host, behaviour):
    add, expected = MISBEHAVIOURS[behaviour]
    fakes = FakePlugins(host.fake_dir)
    fakes.install("fail", ADD=add)
    network = parse_network_list(chain(host, fail_at=2))
    item = attachment(host)
    engine = Engine(host.cni_path, host.cache_dir, timeout=1)

    with pytest.raises(OperationError) as caught:
        engine.add(network, item)

    message = str(caught.value)
    assert f"ADD of network {network.name} failed and was rolled back: " in message
    assert expected in message
    assert not caught.value.cleanup_errors
    host.assert_clean(network.name, [item.container_id], [item.netns])
    _assert_no_process_left(fakes)


def _assert_no_process_left(fakes: FakePlugins) -> None:
    """No process of the fake plugin (or a child it forked) survives the kill."""
    deadline = time.monotonic() + 5
    while True:
        alive = [pid for pid in os.listdir("/proc") if pid.isdigit() and _runs_from(pid, fakes.directory)]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not alive, f"plugin processes still running: {alive}"


def _runs_from(pid: str, directory: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return directory.encode() in handle.read()
    except OSError:
        return False


def test_rollback_that_fails_is_finished_by_the_next_run(host):
    """A DEL that fails during rollback keeps the intent marker; the next converge DELs again,
    then ADDs: one address, nothing left of the first attempt."""
    fakes = FakePlugins(host.fake_dir)
    fakes.install("fail", ADD={"error": {"code": 11, "msg": "injected"}}, DEL={"error": {"code": 12, "msg": "stuck"}})
    network = parse_network_list(chain(host, fail_at=3))
    item = attachment(host)
    engine = Engine(host.cni_path, host.cache_dir, timeout=20)
    with pytest.raises(OperationError) as caught:
        engine.add(network, item)
    assert [str(e) for e in caught.value.cleanup_errors] == ["plugin fail failed (DEL) [code 12]: stuck"]
    assert engine.cache.is_pending(item.key)

    fakes.configure("fail")  # the fault is gone
    outcome = _attach.converge(engine, _attach.Desired(lambda: network, item))
    assert outcome.action == "repaired"
    assert len(addresses_in(item.netns)) == 1
    assert link_names(os.path.basename(item.netns)) == ["lo", "eth0"]
    assert len(host.state(network.name, [item.container_id])["reservations"]) == 1
    engine.delete(network, item)
    host.assert_clean(network.name, [item.container_id], [item.netns])
