# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The result cache (_cache): libcni's exact layout and format, atomic writes, tolerant reads
and the attachment / GC locks."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils import _cache
from ansible_collections.cnikit.cni.plugins.module_utils._cache import CacheEntry, CacheError
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey

# cni-runtime.md §14: the conflist and the cache file libcni writes for it.
CONFIG = (b'{"cniVersion":"1.0.0","name":"mynet","plugins":[{"type":"bridge","bridge":"cni0",'
          b'"ipam":{"type":"host-local","subnet":"10.22.0.0/16"}}]}')
CONFIG_B64 = ("eyJjbmlWZXJzaW9uIjoiMS4wLjAiLCJuYW1lIjoibXluZXQiLCJwbHVnaW5zIjpbeyJ0eXBlIjoiYnJpZGdlIiwiYnJpZGdl"
              "IjoiY25pMCIsImlwYW0iOnsidHlwZSI6Imhvc3QtbG9jYWwiLCJzdWJuZXQiOiIxMC4yMi4wLjAvMTYifX1dfQ==")
RESULT = {"cniVersion": "1.0.0",
          "interfaces": [{"name": "cni0", "mac": "00:11:22:33:44:55"},
                         {"name": "eth0", "mac": "99:88:77:66:55:44", "sandbox": "/var/run/netns/testing"}],
          "ips": [{"interface": 1, "gateway": "10.22.0.1", "address": "10.22.0.5/16"}]}
LIBCNI_FILE = (
    '{"kind":"cniCacheV1","containerId":"cnitool-77383ca0a0715733ca6f","config":"' + CONFIG_B64 + '",'
    '"ifName":"eth0","networkName":"mynet","netns":"/var/run/netns/testing","cniArgs":[["FOO","BAR"]],'
    '"capabilityArgs":{"portMappings":[{"containerPort":80,"hostPort":8080,"protocol":"tcp"}]},'
    '"result":{"cniVersion":"1.0.0","interfaces":[{"mac":"00:11:22:33:44:55","name":"cni0"},'
    '{"mac":"99:88:77:66:55:44","name":"eth0","sandbox":"/var/run/netns/testing"}],'
    '"ips":[{"address":"10.22.0.5/16","gateway":"10.22.0.1","interface":1}]}}'
).encode()


def _entry(**overrides) -> CacheEntry:
    values = {"network": "mynet", "container_id": "cnitool-77383ca0a0715733ca6f", "ifname": "eth0",
              "config": CONFIG, "netns": "/var/run/netns/testing", "cni_args": [["FOO", "BAR"]],
              "capability_args": {"portMappings": [{"protocol": "tcp", "hostPort": 8080, "containerPort": 80}]},
              "result": RESULT}
    values.update(overrides)
    return CacheEntry(**values)


# -- format -------------------------------------------------------------------------------------

def test_entry_serialises_byte_for_byte_as_libcni():
    assert _entry().to_json() == LIBCNI_FILE


def test_empty_optional_fields_are_omitted_as_go_omitempty_does():
    data = json.loads(_entry(netns="", cni_args=[], capability_args={}, result=None).to_json())
    assert list(data) == ["kind", "containerId", "config", "ifName", "networkName"]


def test_write_entry_writes_the_libcni_path_0600_in_0700_dirs(tmp_path):
    cache_dir = tmp_path / "cache"
    path = _cache.ResultCache(str(cache_dir)).write(_entry())
    assert path == str(cache_dir / "results" / "mynet-cnitool-77383ca0a0715733ca6f-eth0")
    with open(path, "rb") as handle:
        assert handle.read() == LIBCNI_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(cache_dir / "results").st_mode) == 0o700
    assert os.listdir(cache_dir / "results") == [os.path.basename(path)]  # no temporary file left


def test_write_entry_replaces_an_existing_entry(tmp_path):
    _cache.ResultCache(str(tmp_path)).write(_entry())
    _cache.ResultCache(str(tmp_path)).write(_entry(result={"cniVersion": "1.0.0", "ips": []}))
    assert _cache.ResultCache(str(tmp_path)).read(AttachmentKey("mynet", "cnitool-77383ca0a0715733ca6f", "eth0")).result == \
        {"cniVersion": "1.0.0", "ips": []}


def test_libcni_file_reads_back_field_by_field(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "mynet-cnitool-77383ca0a0715733ca6f-eth0").write_bytes(LIBCNI_FILE)
    entry = _cache.ResultCache(str(tmp_path)).read(AttachmentKey("mynet", "cnitool-77383ca0a0715733ca6f", "eth0"))
    assert (entry.network, entry.container_id, entry.ifname, entry.config, entry.netns, entry.cni_args) == \
        ("mynet", "cnitool-77383ca0a0715733ca6f", "eth0", CONFIG, "/var/run/netns/testing", [["FOO", "BAR"]])
    assert entry.capability_args == {"portMappings": [{"containerPort": 80, "hostPort": 8080, "protocol": "tcp"}]}
    assert entry.result == RESULT
    assert entry.path == str(results / "mynet-cnitool-77383ca0a0715733ca6f-eth0")


def test_legacy_bare_result_is_readable(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "mynet-c1-eth0").write_text(json.dumps(RESULT))
    entry = _cache.ResultCache(str(tmp_path)).read(AttachmentKey("mynet", "c1", "eth0"))
    assert entry.result == RESULT and entry.config is None
    assert (entry.network, entry.container_id, entry.ifname) == ("mynet", "c1", "eth0")


def test_missing_entry_reads_as_none(tmp_path):
    assert _cache.ResultCache(str(tmp_path)).read(AttachmentKey("mynet", "c1", "eth0")) is None


@pytest.mark.parametrize("content, reason", [
    (b"", "the file is empty"),
    (b"  \n", "the file is empty"),
    (b'{"kind":"cniCacheV1","contai', "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"kind":"cniCacheV2","cniVersion":"1.0.0"}', "unknown kind 'cniCacheV2'"),
    (b'{"ips":[]}', "unknown kind None"),
    (b'{"kind":"cniCacheV1","config":"***","containerId":"c1","ifName":"eth0","networkName":"mynet"}',
     "config is not base64"),
    (b'{"kind":"cniCacheV1","config":"","containerId":"c1","ifName":"eth0","networkName":"mynet","result":[1]}',
     "wrong type"),
    (b'{"kind":"cniCacheV1","config":"","containerId":"c1","ifName":"eth0","networkName":"mynet","cniArgs":"A=1"}',
     "wrong type"),
    (b'{"kind":"cniCacheV1","config":"","ifName":"eth0","networkName":"mynet"}', "containerId is missing"),
    (b'{"kind":"cniCacheV1","config":"","containerId":"c1","networkName":"mynet"}', "ifName is missing"),
])
def test_unusable_files_raise_cache_errors_naming_path_and_reason(tmp_path, content, reason):
    (tmp_path / "results").mkdir()
    path = tmp_path / "results" / "mynet-c1-eth0"
    path.write_bytes(content)
    with pytest.raises(CacheError) as info:
        _cache.ResultCache(str(tmp_path)).read(AttachmentKey("mynet", "c1", "eth0"))
    assert str(info.value).startswith(f"unusable cache file {path}: ")
    assert reason in str(info.value)


def test_delete_entry(tmp_path):
    _cache.ResultCache(str(tmp_path)).write(_entry())
    assert _cache.ResultCache(str(tmp_path)).delete(AttachmentKey("mynet", "cnitool-77383ca0a0715733ca6f", "eth0")) is True
    assert _cache.ResultCache(str(tmp_path)).delete(AttachmentKey("mynet", "cnitool-77383ca0a0715733ca6f", "eth0")) is False


# -- identifiers guard the path -----------------------------------------------------------------

@pytest.mark.parametrize("network, container_id, ifname, field", [
    ("../x", "c1", "eth0", "network"), ("a/b", "c1", "eth0", "network"), ("", "c1", "eth0", "network"),
    ("net", "../../etc/passwd", "eth0", "container_id"), ("net", "c1/..", "eth0", "container_id"),
    ("net", "c\x001", "eth0", "container_id"), ("net", "c1", "../x", "ifname"), ("net", "c1", "..", "ifname"),
    ("net", "c1", "a" * 16, "ifname"), ("net", "c1", "e\x00", "ifname"),
    ("n" * 200, "c" * 50, "eth0", "container_id"),  # together longer than a file name
])
def test_entry_path_refuses_anything_that_could_leave_the_cache_dir(tmp_path, network, container_id, ifname, field):
    with pytest.raises(ConfigError) as info:
        _cache.ResultCache(str(tmp_path)).path(AttachmentKey(network, container_id, ifname))
    assert info.value.path == field
    with pytest.raises(ConfigError):
        _cache.ResultCache(str(tmp_path)).write(_entry(network=network, container_id=container_id, ifname=ifname))
    assert not (tmp_path / "results").exists() or os.listdir(tmp_path / "results") == []


# -- listing ------------------------------------------------------------------------------------

def test_entries_sorted_filtered_and_reporting_problems(tmp_path):
    for network, cid in (("net2", "c1"), ("net1", "c2"), ("net1", "c1")):
        _cache.ResultCache(str(tmp_path)).write(_entry(network=network, container_id=cid))
    results = tmp_path / "results"
    (results / "net1-legacy-eth0").write_text(json.dumps(RESULT))      # legacy: no config, skipped
    (results / "net1-broken-eth0").write_text("")                       # reported
    (results / ".net1-c3-eth0.abc.tmp").write_text("")                  # an in-flight write: ignored
    (results / "adir").mkdir()
    entries, problems = _cache.ResultCache(str(tmp_path)).entries("net1")
    assert [(e.network, e.container_id) for e in entries] == [("net1", "c1"), ("net1", "c2")]
    assert [p.path for p in problems] == [str(results / "net1-broken-eth0")]
    everything = _cache.ResultCache(str(tmp_path)).entries()[0]
    assert [(e.network, e.container_id) for e in everything] == [("net1", "c1"), ("net1", "c2"), ("net2", "c1")]


def test_entries_without_cache_dir(tmp_path):
    assert _cache.ResultCache(str(tmp_path / "none")).entries() == ([], [])


# -- locks --------------------------------------------------------------------------------------

def _stripe(network, container_id, ifname):
    digest = hashlib.sha256(f"{network}\0{container_id}\0{ifname}".encode()).hexdigest()
    return int(digest, 16) % _cache.LOCK_STRIPES


def _holder(lock):
    """Hold ``lock`` in a thread until released; returns (acquired, release) events."""
    acquired, release = threading.Event(), threading.Event()

    def run():
        with lock:
            acquired.set()
            release.wait(10)

    threading.Thread(target=run, daemon=True).start()
    return acquired, release


def test_locks_live_in_a_0700_dir_of_their_own(tmp_path):
    with _cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c1", "eth0")):
        pass
    locks = tmp_path / _cache.LOCKS_SUBDIR
    assert stat.S_IMODE(os.stat(locks).st_mode) == 0o700
    assert sorted(os.listdir(locks)) == ["attachment-%03d.lock" % _stripe("net", "c1", "eth0"), "network-net.lock"]


def test_same_attachment_is_serialised(tmp_path):
    first_in, first_out = _holder(_cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c1", "eth0")))
    assert first_in.wait(5)
    second_in, second_out = _holder(_cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c1", "eth0")))
    assert not second_in.wait(0.3)
    first_out.set()
    assert second_in.wait(5)
    second_out.set()


def test_different_attachments_run_in_parallel(tmp_path):
    assert _stripe("net", "c1", "eth0") != _stripe("net", "c2", "eth0")
    first_in, first_out = _holder(_cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c1", "eth0")))
    second_in, second_out = _holder(_cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c2", "eth0")))
    assert first_in.wait(5) and second_in.wait(5)
    first_out.set()
    second_out.set()


def test_gc_lock_waits_for_attachments_of_its_network_only(tmp_path):
    attach_in, attach_out = _holder(_cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c1", "eth0")))
    assert attach_in.wait(5)
    other_in, other_out = _holder(_cache.ResultCache(str(tmp_path)).lock_for_gc("other"))
    assert other_in.wait(5)
    gc_in, gc_out = _holder(_cache.ResultCache(str(tmp_path)).lock_for_gc("net"))
    assert not gc_in.wait(0.3)
    attach_out.set()
    assert gc_in.wait(5)
    # ... and an attachment waits for a running GC of its network.
    late_in, late_out = _holder(_cache.ResultCache(str(tmp_path)).lock(AttachmentKey("net", "c2", "eth0")))
    assert not late_in.wait(0.3)
    gc_out.set()
    assert late_in.wait(5)
    for event in (other_out, late_out):
        event.set()


@pytest.mark.parametrize("network", ["../x", "a/b", ""])
def test_lock_names_are_checked(tmp_path, network):
    with pytest.raises(ConfigError):
        with _cache.ResultCache(str(tmp_path)).lock_for_gc(network):
            pass
    assert not (tmp_path / _cache.LOCKS_SUBDIR).exists()


@pytest.mark.parametrize("lock", [
    lambda d: _cache.ResultCache(d).lock(AttachmentKey("net", "c1", "eth0")),
    lambda d: _cache.ResultCache(d).lock_for_gc("net"),
])
def test_unusable_cache_dir_is_a_config_error_naming_it(tmp_path, lock):
    cache_dir = tmp_path / "cache"
    cache_dir.write_text("a file, not a directory")
    with pytest.raises(ConfigError) as info:
        with lock(str(cache_dir)):
            pass
    assert info.value.path == "cache_dir" and info.value.value == str(cache_dir)
    assert f"cannot use {cache_dir}: not a directory" in str(info.value)


def test_idle_lock_files_and_empty_directories_are_removed_held_ones_kept(tmp_path):
    cache_dir = str(tmp_path)
    _cache.ResultCache(cache_dir).mark_pending(AttachmentKey("net", "c1", "eth0"))
    _cache.ResultCache(cache_dir).clear_pending(AttachmentKey("net", "c1", "eth0"))
    assert os.listdir(tmp_path / _cache.PENDING_SUBDIR) == []  # the directory stays for the next ADD
    held_in, held_out = _holder(_cache.ResultCache(cache_dir).lock(AttachmentKey("net", "c1", "eth0")))
    assert held_in.wait(5)
    with _cache.ResultCache(cache_dir).lock_for_gc("other"):
        pass
    _cache.ResultCache(cache_dir).tidy()
    assert sorted(os.listdir(tmp_path / _cache.LOCKS_SUBDIR)) == [
        "attachment-%03d.lock" % _stripe("net", "c1", "eth0"), "network-net.lock"]
    assert not (tmp_path / _cache.PENDING_SUBDIR).exists()  # empty: removed with the idle locks
    held_out.set()
    _wait_until(lambda: _cache.ResultCache(cache_dir).tidy() or not (tmp_path / _cache.LOCKS_SUBDIR).exists())


def test_a_lock_file_removed_while_waited_for_is_opened_anew(tmp_path):
    cache_dir = str(tmp_path)
    first_in, first_out = _holder(_cache.ResultCache(cache_dir).lock_for_gc("net"))
    assert first_in.wait(5)
    second_in, second_out = _holder(_cache.ResultCache(cache_dir).lock_for_gc("net"))  # waits on the same file
    assert not second_in.wait(0.3)
    os.unlink(tmp_path / _cache.LOCKS_SUBDIR / "network-net.lock")  # as an idle sweep would, once free
    first_out.set()
    assert second_in.wait(5)
    # The waiter holds a new file at the path, so a third locker is kept out by it.
    third_in, third_out = _holder(_cache.ResultCache(cache_dir).lock_for_gc("net"))
    assert not third_in.wait(0.3)
    second_out.set()
    assert third_in.wait(5)
    third_out.set()


def _wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
