# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A cache file that is empty, truncated, of an unknown version or otherwise unusable: DEL
still cleans up everything the attachment had; present repairs an entry still readable as ours
and refuses, changing nothing, one it cannot read (it may be another runtime's live container)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import PREFIX, addresses_in, link_names, valid_cache_files

from ansible_collections.cnikit.cni.plugins.module_utils import _attach, _cache
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _unknown_version(data: bytes) -> bytes:
    entry = json.loads(data)
    entry["kind"] = "cniCacheV2"
    return json.dumps(entry).encode()


def _wrong_types(data: bytes) -> bytes:
    entry = json.loads(data)
    entry["result"] = ["not", "an", "object"]
    return json.dumps(entry).encode()


def _result_of_unknown_version(data: bytes) -> bytes:
    entry = json.loads(data)
    entry["result"]["cniVersion"] = "7.0.0"
    return json.dumps(entry).encode()


def _ips_of_the_wrong_type(data: bytes) -> bytes:
    entry = json.loads(data)
    entry["result"]["ips"] = entry["result"]["ips"][0]["address"]
    return json.dumps(entry).encode()


def _non_ascii_config(data: bytes) -> bytes:
    entry = json.loads(data)
    entry["config"] = "\u0080" + entry["config"]
    return json.dumps(entry).encode()


CORRUPTIONS = {
    "empty": lambda data: b"",
    "truncated": _truncated,
    "one byte": lambda data: data[:1],
    "NUL bytes": lambda data: b"\0" * len(data),
    "unknown kind (cniCacheV2)": _unknown_version,
    "result of an unknown cniVersion": _result_of_unknown_version,
    "result of the wrong type": _wrong_types,
    "result whose ips is a string": _ips_of_the_wrong_type,
    "config with a non-ASCII character": _non_ascii_config,
    "legacy bare result": lambda data: json.dumps(json.loads(data)["result"]).encode(),
}
# Still a cniCacheV1 entry with our mark, only its result is broken: ours, and repaired.
STILL_OURS = ("result of an unknown cniVersion", "result whose ips is a string")


@pytest.fixture
def attached(host):
    """A real bridge + tuning + portmap attachment, with its cache file."""
    conf = host.conflist(f"{PREFIX}cache{host.index}", [
        {"type": "tuning", "mtu": 1400},
        {"type": "portmap", "capabilities": {"portMappings": True}, "snat": False},
    ], subnet=f"10.247.{host.index}.0/24")
    network = parse_network_list(conf)
    item = Attachment(network.name, f"{PREFIX}c{host.index}", host.netns(f"c{host.index}"), "eth0",
                      capability_args={"portMappings": [{"hostPort": 22000 + host.index, "containerPort": 80,
                                                         "protocol": "tcp"}]})
    engine = Engine(host.cni_path, host.cache_dir, timeout=20)
    desired = _attach.Desired(lambda: network, item)
    assert _attach.converge(engine, desired).action == "added"
    path = _cache.ResultCache(host.cache_dir).path(item.key)
    return engine, desired, path


def _corrupt(path: str, how: str) -> None:
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write(CORRUPTIONS[how](data))


@pytest.mark.parametrize("how", list(CORRUPTIONS))
def test_del_cleans_up_with_an_unusable_cache_file(host, attached, how):
    engine, desired, path = attached
    _corrupt(path, how)
    absent = _attach.Desired(desired.load_network, desired.attachment, state="absent")

    assert _attach.converge(engine, absent).action == "deleted"

    host.assert_clean(desired.network_name, [desired.attachment.container_id], [desired.attachment.netns])
    assert _attach.converge(engine, absent).action == "absent"


@pytest.mark.parametrize("how", [how for how in CORRUPTIONS if how not in STILL_OURS])
def test_present_refuses_a_cache_file_it_cannot_read_and_changes_nothing(host, attached, how):
    engine, desired, path = attached
    before = addresses_in(desired.attachment.netns)
    _corrupt(path, how)
    with open(path, "rb") as handle:
        corrupted = handle.read()

    with pytest.raises(_attach.UnusableEntryError, match=f"container ID {desired.attachment.container_id}, ifname eth0"):
        _attach.converge(engine, desired)

    assert addresses_in(desired.attachment.netns) == before
    with open(path, "rb") as handle:
        assert handle.read() == corrupted
    engine.delete(desired.load_network(), desired.attachment)
    host.assert_clean(desired.network_name, [desired.attachment.container_id], [desired.attachment.netns])


@pytest.mark.parametrize("how", STILL_OURS)
def test_present_repairs_an_entry_of_ours_whose_result_is_broken(host, attached, how):
    engine, desired, path = attached
    _corrupt(path, how)

    outcome = _attach.converge(engine, desired)

    assert outcome.action == "repaired"
    [address] = addresses_in(desired.attachment.netns)
    assert host.reservations(desired.network_name) == {address.split("/")[0]: desired.attachment.container_id}
    [entry] = valid_cache_files(host.cache_dir)
    assert entry.result["ips"][0]["address"] == address
    assert _attach.converge(engine, desired).action == "unchanged"
    engine.delete(desired.load_network(), desired.attachment)
    host.assert_clean(desired.network_name, [desired.attachment.container_id], [desired.attachment.netns])


def test_marker_left_after_the_cache_was_written_is_cleared(host, attached):
    """A kill between writing the cache entry and removing the intent marker leaves both; the
    attachment is complete, and the next run must not leave the marker behind forever."""
    engine, desired, _path = attached
    item = desired.attachment
    _cache.ResultCache(host.cache_dir).mark_pending(item.key)

    outcome = _attach.converge(engine, desired)

    assert outcome.action in ("unchanged", "repaired")
    assert link_names(os.path.basename(item.netns)) == ["lo", "eth0"]
    assert len(addresses_in(item.netns)) == 1
    assert host.state(desired.network_name, [item.container_id])["pending"] == []
    engine.delete(desired.load_network(), item)
    host.assert_clean(desired.network_name, [item.container_id], [item.netns])
