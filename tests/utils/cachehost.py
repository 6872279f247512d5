# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A test host for the unit tests of _gc and _facts: hand-written cniCacheV1 files and the
test-double plugin.

Namespaces are stood in for by plain files outside /run/netns: _netns.is_netns treats such a
path as live exactly when it exists, so liveness is controlled without root."""

from __future__ import annotations

import base64
import json
import os

import script_plugin

from ansible_collections.cnikit.cni.plugins.module_utils._engine import Engine

FAKE_PLUGIN = os.path.join(os.path.dirname(__file__), "fakeplugin.py")


class Host:
    """A plugin dir with the test double, a conf dir, a cache dir and a call log."""

    def __init__(self, root):
        self.root = root
        self.bin = root / "bin"
        self.conf = root / "net.d"
        self.cache = root / "cache"
        self.log = root / "calls.jsonl"
        for directory in (self.bin, self.conf, self.cache / "results"):
            directory.mkdir(parents=True)
        self.engine = Engine([str(self.bin)], str(self.cache), timeout=20)

    def plugin(self, name="noop", **behaviour):
        """Install the test double as ``name``; ``behaviour`` is its debug file (per verb)."""
        path = self.bin / name
        script_plugin.install(FAKE_PLUGIN, path)
        self.debug(name, **behaviour)
        return str(path)

    def debug(self, name, **behaviour):
        (self.bin / f"{name}.debug.json").write_text(json.dumps(dict(behaviour, log=str(self.log))))

    def conflist(self, name, version="1.1.0", file=None, **extra):
        conf = dict({"cniVersion": version, "name": name,
                     "plugins": [{"type": "noop", "debugFile": str(self.bin / "noop.debug.json")}]}, **extra)
        path = self.conf / (file or f"10-{name}.conflist")
        path.write_text(json.dumps(conf))
        return conf

    def cache_entry(self, network, container_id, netns, ifname="eth0", conf=None, ips=("10.249.7.2/24",),
                    managed=True, cache_netns=True):
        """An entry as this collection writes it (``managed``), or as another runtime does; with
        ``cache_netns`` False, as libcni before 1.2 does: the path only in the result's sandbox."""
        conf = conf or {"cniVersion": "1.1.0", "name": network,
                        "plugins": [{"type": "noop", "debugFile": str(self.bin / "noop.debug.json")}]}
        entry = {"kind": "cniCacheV1", "containerId": container_id,
                 "config": base64.b64encode(json.dumps(conf).encode()).decode(),
                 "ifName": ifname, "networkName": network, "netns": netns,
                 "result": {"cniVersion": "1.1.0",
                            "interfaces": [{"name": ifname, "mac": "0a:58:0a:f9:07:02", "sandbox": netns}],
                            "ips": [{"address": ip, "interface": 0} for ip in ips]}}
        if not cache_netns:
            del entry["netns"]
        if managed:
            entry["cnikit"] = {"managed": True}
        path = self.cache / "results" / f"{network}-{container_id}-{ifname}"
        path.write_text(json.dumps(entry))
        return path

    def netns(self, name):
        """A live stand-in namespace (a file); delete it to make the namespace 'gone'."""
        path = self.root / name
        path.touch()
        return str(path)

    def calls(self, verb=None):
        if not self.log.exists():
            return []
        lines = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [c for c in lines if verb is None or c["verb"] == verb]
