# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Debian's podman 4.3 on its CNI backend, with every piece of its configuration under a test
directory: containers.conf (CONTAINERS_CONF, read instead of the system files), storage.conf
(CONTAINERS_STORAGE_CONF: vfs storage, graphroot and runroot in the directory), the network
config dir, and a busybox rootfs the containers run from (no image is ever pulled).

What podman cannot be pointed elsewhere: its libcni keeps the result cache in /var/lib/cni (no
setting in containers.conf 4.3 changes libcni's cache dir), runc keeps its state in /run/runc
and the container namespaces are mounted in /run/netns. The clean-up therefore removes exactly
the cache entries, lock files and reservations of this run's networks and containers, never
anything else there."""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import hostclean
import releases
from ansible_collections.cnikit.cni.plugins.module_utils import _cache

PREFIX = "cnit-p-"
CNI_CACHE = "/var/lib/cni"
PLUGINS = releases.PLUGIN_DIR
BUSYBOX = "/bin/busybox"
# Podman as root sets nofile and nproc limits the test machines' containers may not raise to.
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "{root}/events.log"
runtime = "runc"
tmp_dir = "{root}/tmp"
volume_path = "{root}/storage/volumes"
static_dir = "{root}/storage/libpod"

[network]
network_backend = "cni"
network_config_dir = "{root}/net.d"
cni_plugin_dirs = ["{plugins}"]
default_network = "{prefix}default"
default_subnet = "10.241.255.0/24"
"""
STORAGE_CONF = """\
[storage]
driver = "vfs"
graphroot = "{root}/storage"
runroot = "{root}/runroot"
"""


def run(*argv: str, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"{shlex.join(argv)} failed (rc {done.returncode}): {done.stderr.strip()}")
    return done


def addresses_in(netns: str, ifname: str = "eth0") -> list:
    out = run("ip", "-n", os.path.basename(netns), "-j", "addr", "show", "dev", ifname, check=False).stdout
    return [f"{a['local']}/{a['prefixlen']}" for link in json.loads(out or "[]") for a in link.get("addr_info", [])
            if a.get("family") == "inet"]


def pings(netns: str, address: str) -> bool:
    """One echo from inside ``netns`` to ``address`` (on a bridge the test made) answered."""
    return run("ip", "netns", "exec", os.path.basename(netns), "ping", "-c1", "-W2", address,
               check=False).returncode == 0


def _free_tag() -> str:
    """One hex digit no other run on this host uses now, so concurrent runs keep apart."""
    links = json.loads(run("ip", "-j", "link", "show").stdout or "[]")
    names = [link["ifname"] for link in links] + (os.listdir("/run/netns") if os.path.isdir("/run/netns") else [])
    used = {n[len(PREFIX)] for n in names if n.startswith(PREFIX) and len(n) > len(PREFIX)}
    return random.choice([t for t in "0123456789abcdef" if t not in used] or ["f"])


@dataclass
class Container:
    name: str
    id: str
    netns: str  # podman's /run/netns/netns-<uuid>
    address: str  # with prefix length
    network: str

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]


class PodmanHost:
    """Podman and the modules sharing a conf dir, /var/lib/cni and host-local's dataDir."""

    def __init__(self, root: Path):
        self.root = root
        self.tag = _free_tag()
        self.prefix = f"{PREFIX}{self.tag}"
        self.conf_dir = root / "net.d"
        self.data_dir = root / "ipam"
        self.rootfs = root / "rootfs"
        self.work = root / "moduletmp"
        self.containers: list = []
        self.networks: list = []
        self.namespaces: list = []
        self._serial = 0
        for directory in (self.conf_dir, self.data_dir, self.rootfs / "bin", root / "tmp"):
            directory.mkdir(parents=True)
        shutil.copy(BUSYBOX, self.rootfs / "bin" / "busybox")
        for applet in ("sh", "sleep"):
            (self.rootfs / "bin" / applet).symlink_to("busybox")
        values = {"root": root, "plugins": PLUGINS, "prefix": PREFIX}
        (root / "containers.conf").write_text(CONTAINERS_CONF.format(**values))
        (root / "storage.conf").write_text(STORAGE_CONF.format(**values))
        self.env = dict(os.environ, CONTAINERS_CONF=str(root / "containers.conf"),
                        CONTAINERS_STORAGE_CONF=str(root / "storage.conf"))

    def next(self) -> int:
        self._serial += 1
        return self._serial

    # -- podman ---------------------------------------------------------------------------------

    def podman(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return run("podman", *argv, check=check, env=self.env)

    def start(self, network: str, *options: str) -> Container:
        """A container running ``sleep`` from the test's rootfs, attached to ``network``."""
        name = f"{self.prefix}c{self.next()}"
        cid = self.podman("run", "-d", "--name", name, "--network", network, *options,
                          "--rootfs", str(self.rootfs), "/bin/sleep", "3600").stdout.strip()
        self.containers.append(cid)
        inspect = json.loads(self.podman("inspect", cid).stdout)[0]["NetworkSettings"]
        settings = inspect["Networks"][network]
        container = Container(name, cid, inspect["SandboxKey"], f"{settings['IPAddress']}/{settings['IPPrefixLen']}",
                              network)
        self.namespaces.append(container.netns)
        return container

    def create_network(self, *options: str) -> str:
        """``podman network create`` of a network of this run; returns its name."""
        name = f"{self.prefix}-pn{self.next()}"
        self.networks.append(name)
        self.podman("network", "create", *options, name)
        return name

    # -- networks the modules write ---------------------------------------------------------------

    def bridge_network(self) -> dict:
        """Arguments of cni_network for a bridge + host-local (+ portmap) network of this run, on a
        bridge named with the prefix and a /24 of 10.241.0.0/16 no concurrent run uses."""
        index = self.next()
        name = f"{self.prefix}-n{index}"
        self.networks.append(name)
        subnet = f"10.241.{int(self.tag, 16) * 16 + index % 16}.0/24"
        gateway = subnet.rsplit(".", 1)[0] + ".1"
        # ranges, not the subnet shorthand: podman reads its subnets (and shows them) only from ranges.
        ipam = {"type": "host-local", "ranges": [[{"subnet": subnet, "gateway": gateway}]], "dataDir": str(self.data_dir)}
        plugins = [{"type": "bridge", "bridge": f"{self.prefix}b{index}", "isGateway": True, "ipMasq": False,
                    "ipam": ipam},
                   {"type": "portmap", "capabilities": {"portMappings": True}}]
        return {"name": name, "plugins": plugins, "subnet": subnet, "gateway": gateway,
                "bridge": f"{self.prefix}b{index}"}

    def netns(self) -> str:
        """A named namespace of this run (not podman's); returns its path."""
        name = f"{self.prefix}s{self.next()}"
        run("ip", "netns", "add", name)
        return f"/var/run/netns/{name}"

    # -- what an attachment leaves on the host ----------------------------------------------------

    def cache_file(self, network: str, container_id: str, ifname: str = "eth0") -> Path:
        return Path(CNI_CACHE, "results", f"{network}-{container_id}-{ifname}")

    def reservation_owner(self, network: str, ip: str) -> str | None:
        path = self.data_dir / network / ip
        return path.read_text().split("\n")[0].strip() if path.exists() else None

    @staticmethod
    def portmap_rules(container_id: str) -> list:
        """portmap's nat rules for the container (their comment carries its ID)."""
        mark = f'id: \\"{container_id}\\"'
        return [line for line in run("iptables", "-t", "nat", "-S").stdout.splitlines() if mark in line]

    # -- clean-up -------------------------------------------------------------------------------

    def clean(self) -> None:
        """Remove everything of this run, whatever state a test left: podman's containers and
        networks first (podman DELs its attachments), then what is left of this run's cache
        entries, port mappings, namespaces, reservations and links."""
        for cid in self.containers:
            self.podman("rm", "-f", "-t", "0", cid, check=False)
        for name in self.networks:
            if (self.conf_dir / f"{name}.conflist").exists():
                self.podman("network", "rm", "-f", name, check=False)
        self._drop_cache_files()
        # The modules' lock files outlive an ADD until a DEL or GC sweeps them; the sweep takes
        # only those nobody holds, so a concurrent user of /var/lib/cni is not disturbed.
        _cache.ResultCache(CNI_CACHE).tidy()
        for cid in self.containers:
            hostclean.drop_portmap_rules(self.portmap_rules(cid))
        for netns in self.namespaces:
            if os.path.exists(netns):
                run("ip", "netns", "del", os.path.basename(netns), check=False)
        for directory in (Path(CNI_CACHE, "networks", n) for n in self.networks):
            if directory.exists():  # host-local's default dataDir (networks podman made)
                shutil.rmtree(directory)
        links = json.loads(run("ip", "-j", "link", "show").stdout or "[]")
        for name in (link["ifname"] for link in links if link["ifname"].startswith(self.prefix)):
            run("ip", "link", "del", name, check=False)
        names = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
        for name in (n for n in names if n.startswith(self.prefix)):
            run("ip", "netns", "del", name, check=False)

    def _drop_cache_files(self) -> None:
        """Cache entries, pending markers and network locks of this run's networks or containers."""
        owned = tuple(f"{n}-" for n in self.networks) + tuple(f"network-{n}.lock" for n in self.networks)
        for sub in (_cache.RESULTS_SUBDIR, _cache.PENDING_SUBDIR, _cache.LOCKS_SUBDIR):
            directory = Path(CNI_CACHE, sub)
            for path in directory.iterdir() if directory.is_dir() else []:
                name = path.name.removeprefix(".")
                if name.startswith(owned) or any(cid in name for cid in self.containers):
                    path.unlink(missing_ok=True)


def snapshot(paths: tuple) -> dict:
    """Every file under ``paths``: its path -> its bytes."""
    files = {}
    for top in paths:
        for directory, _dirs, names in os.walk(top):
            for name in names:
                path = os.path.join(directory, name)
                with open(path, "rb") as handle:
                    files[path] = handle.read()
    return files


def restore(before: dict, paths: tuple) -> list:
    """Put the files of ``paths`` back as ``before`` had them; returns the paths that differed."""
    now = snapshot(paths)
    changed = sorted(p for p in set(before) | set(now) if before.get(p) != now.get(p))
    for path in changed:
        if path in before:
            Path(path).write_bytes(before[path])
        else:
            os.unlink(path)
    return changed
