# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Load and concurrency: eight module processes attaching different namespaces to one network
at once, round after round, with garbage collection running all the while; and hundreds of
attachments on one host attached, converged and detached by one task."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import modules
from conftest import PREFIX, addresses_in, count, link_names, run, valid_cache_files

from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Attachment, Engine

WORKERS = 8
DOOMED_PER_PASS = 3  # stale attachments each GC pass must DEL: a long critical section
HOLD = 0.2  # seconds each interval-plugin call stays busy: wide windows for an overlap to show
ROUNDS = count(3, 15)
SCALE = count(200, 200)
INTERVAL_PLUGIN = Path(__file__).resolve().parent / "intervalplugin.py"


def _install_interval_plugin(host) -> None:
    """The plugin script with this interpreter in its shebang, executable, as ``interval``."""
    os.makedirs(host.fake_dir, exist_ok=True)
    path = os.path.join(host.fake_dir, "interval")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"#!{sys.executable}\n" + INTERVAL_PLUGIN.read_text())
    os.chmod(path, 0o755)


def _intervals(path: str) -> list:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _spans(records: list, predicate) -> list:
    """One span per runtime operation: the calls of one process for one container and verb."""
    spans = {}
    for record in filter(predicate, records):
        key = (record["ppid"], record["cid"], record["verb"])
        start, end = spans.get(key, (record["start"], record["end"]))
        spans[key] = (min(start, record["start"]), max(end, record["end"]))
    return [(key, start, end) for key, (start, end) in spans.items()]


class Collector(threading.Thread):
    """Garbage collection in a loop beside the attach plays: each pass makes an attachment stale
    (ADD, then delete its namespace) and runs the cni_gc module, which must DEL it."""

    def __init__(self, host, network, engine, work):
        super().__init__(daemon=True)
        self.host, self.network, self.engine, self.work = host, network, engine, work
        self.stop = threading.Event()
        self.passes = 0
        self.collected = 0
        self.failure = None

    def run(self):
        try:
            while not self.stop.is_set():
                doomed = []
                for index in range(DOOMED_PER_PASS):
                    name = f"doom{self.passes}x{index}"
                    doomed.append(Attachment(self.network.name, f"{PREFIX}{name}", self.host.netns(name), "eth0"))
                    self.engine.add(self.network, doomed[-1])
                    run("ip", "netns", "del", f"{PREFIX}{name}")
                result = modules.run("cni_gc", {"network": self.network.name, "conf_dir": self.host.conf_dir,
                                                "cache_dir": self.host.cache_dir, "cni_path": self.host.cni_path},
                                     self.work)
                assert not result.get("failed"), result
                ids = {d.container_id for d in doomed}
                self.collected += sum(1 for c in result["collected"] if c["container_id"] in ids)
                self.passes += 1
        except BaseException as exc:  # pylint: disable=broad-except  # reported by the test
            self.failure = exc


def test_concurrent_plays_get_distinct_addresses_and_gc_never_overlaps(host, tmp_path, figures):
    _install_interval_plugin(host)
    log = str(tmp_path / "intervals.jsonl")
    interval = {"type": "interval", "intervalLog": log, "holdSeconds": HOLD}
    conf = host.conflist(f"{PREFIX}load{host.index}", [interval], subnet=f"10.247.{host.index}.0/24")
    conf["plugins"].insert(0, dict(interval))  # spans cover the whole chain, bridge included
    host.write_conflist(conf)
    network = parse_network_list(conf)
    engine = Engine(host.cni_path, host.cache_dir, timeout=30)
    namespaces = [host.netns(f"w{i}") for i in range(WORKERS)]
    ids = [f"{PREFIX}w{i}" for i in range(WORKERS)]
    work = str(tmp_path / "moduletmp")

    def play(i, state):
        result = modules.run("cni_attach", {"network": network.name, "netns": namespaces[i], "container_id": ids[i],
                                            "state": state, "conf_dir": host.conf_dir, "cache_dir": host.cache_dir,
                                            "cni_path": host.cni_path, "timeout": 30}, os.path.join(work, str(i)))
        assert not result.get("failed"), result
        return result

    collector = Collector(host, network, engine, os.path.join(work, "gc"))
    collector.start()
    addresses_seen = 0
    try:
        with ThreadPoolExecutor(WORKERS) as pool:
            for _round in range(ROUNDS):
                results = list(pool.map(lambda i: play(i, "present"), range(WORKERS)))
                assert {r["action"] for r in results} == {"added"}
                addresses = [r["ips"][0] for r in results]
                assert len(set(addresses)) == WORKERS, addresses
                assert [addresses_in(ns) for ns in namespaces] == [[a] for a in addresses]
                entries = {e.container_id: e for e in valid_cache_files(host.cache_dir)}
                assert [entries[cid].result["ips"][0]["address"] for cid in ids] == addresses
                assert {ip: cid for ip, cid in host.reservations(network.name).items() if cid in ids} == \
                    {a.split("/")[0]: cid for a, cid in zip(addresses, ids)}
                addresses_seen += len(addresses)
                results = list(pool.map(lambda i: play(i, "absent"), range(WORKERS)))
                assert {r["action"] for r in results} == {"deleted"}
                # The collector's namespaces are deleted, so their veths go as the kernel gets to it.
                host.assert_clean(network.name, ids, namespaces, veths=False)
                valid_cache_files(host.cache_dir)
    finally:
        collector.stop.set()
        collector.join(120)
    assert collector.failure is None, collector.failure
    assert collector.collected == collector.passes * DOOMED_PER_PASS > 0

    records = _intervals(log)
    gc_spans = _spans(records, lambda r: r["verb"] == "DEL" and r["cid"].startswith(f"{PREFIX}doom"))
    play_spans = _spans(records, lambda r: r["cid"] in ids)
    overlaps = [(g, p) for g in gc_spans for p in play_spans if g[1] < p[2] and p[1] < g[2]]
    assert not overlaps, overlaps[:5]
    # The check proves something only if GC really ran among the plays.
    first, last = min(p[1] for p in play_spans), max(p[2] for p in play_spans)
    during = [g for g in gc_spans if first < g[1] < last]
    assert during, "no garbage collection ran while the plays did"
    doomed = [f"{PREFIX}doom{p}x{i}" for p in range(collector.passes + 1) for i in range(DOOMED_PER_PASS)]
    deadline = time.monotonic() + 20
    while host.state(network.name, [])["veths"] and time.monotonic() < deadline:
        time.sleep(0.1)  # deleted namespaces are torn down by the kernel asynchronously
    host.assert_clean(network.name, ids + doomed, namespaces)
    figures({"rounds": ROUNDS, "attachments": addresses_seen, "gc_passes": collector.passes,
             "gc_dels": len(gc_spans), "gc_dels_among_plays": len(during), "play_operations": len(play_spans),
             "overlaps": 0})


def test_hundreds_of_attachments_attach_converge_detach(host, tmp_path, figures):
    conf = host.conflist(f"{PREFIX}scale{host.index}", [{"type": "tuning", "mtu": 1400}], subnet="10.247.252.0/22")
    host.write_conflist(conf)
    names = [f"{PREFIX}s{i}" for i in range(SCALE)]
    host.namespaces.extend(names)
    work = str(tmp_path / "moduletmp")
    base = {"network": conf["name"], "conf_dir": host.conf_dir, "cache_dir": host.cache_dir, "cni_path": host.cni_path,
            "create_netns": True, "parallel": 8, "timeout": 60}

    def task(state):
        result = modules.run("cni_attach", dict(base, attachments=[
            {"netns": name, "container_id": name, "state": state} for name in names]), work)
        assert not result.get("failed"), result.get("msg")
        return result["attachments"]

    attached = task("present")
    assert {item["action"] for item in attached} == {"added"}
    addresses = [item["ips"][0] for item in attached]
    assert len(set(addresses)) == SCALE
    assert len(host.reservations(conf["name"])) == SCALE
    assert len(host.state(conf["name"], names)["veths"]) == SCALE
    assert len(valid_cache_files(host.cache_dir)) == SCALE

    assert {item["action"] for item in task("present")} == {"unchanged"}

    assert {item["action"] for item in task("absent")} == {"deleted"}
    host.assert_clean(conf["name"], names)
    assert host.reservations(conf["name"]) == {}
    assert all(link_names(name) == ["lo"] for name in names)
    figures({"attachments": SCALE, "distinct_addresses": len(set(addresses))})
