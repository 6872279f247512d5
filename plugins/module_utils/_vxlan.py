# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_vxlan's service: one VXLAN device the flannel way (no learning: every peer is told), its
VTEP address, and per peer a permanent neighbour entry (peer VTEP address to peer MAC) and an FDB
entry (peer MAC to the peer's underlay address), reconciled exactly. The device is the module's by
its name: every neighbour and FDB entry on it is the module's, and one the peers do not list goes.

The steps: options checked (``parse_options``), the device read through ``ip -j`` and ``bridge -j``
(``read_state``, whose parsing, ``parse_state``, is pure), the commands that make it the desired
one planned (``make_plan``, pure), then run in order. Everything goes through the host's
``run_command`` and iproute2, one way for the device and its tables."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ._errors import CNIError, ConfigError
from ._identifiers import check_ifname, check_ip

MAX_VNI = 2**24 - 1


@dataclass(frozen=True)
class Device:
    """The VXLAN device: what it is made with (changing any of ``vni``, ``port``, ``local``,
    ``dev``, ``learning`` makes it anew), its MAC, whether it is up and its IPv4 addresses."""

    name: str
    vni: int
    port: int
    local: str
    dev: str
    mac: str
    learning: bool = False
    up: bool = True
    addresses: tuple = ()  # "address/prefixlen"

    @property
    def making(self) -> tuple:
        return self.vni, self.port, self.local, self.dev, self.learning


@dataclass(frozen=True)
class State:
    """A device and its tables: neighbours (VTEP address to MAC), FDB (MAC to underlay address)."""

    device: Device | None
    neighbours: dict = field(default_factory=dict)
    fdb: dict = field(default_factory=dict)

    def lines(self) -> str:
        """The state as diff text, one line per fact."""
        if self.device is None:
            return ""
        device = self.device
        words = [f"{device.name}: vxlan id {device.vni} dstport {device.port} local {device.local} dev {device.dev}",
                 f"address {device.mac}", "learning" if device.learning else "nolearning",
                 "up" if device.up else "down"]
        text = " ".join(words) + "\n"
        text += "".join(f"addr {address}\n" for address in device.addresses)
        text += "".join(f"neigh {vtep} lladdr {mac} permanent\n" for vtep, mac in sorted(self.neighbours.items()))
        text += "".join(f"fdb {mac} dst {dst}\n" for mac, dst in sorted(self.fdb.items()))
        return text


@dataclass(frozen=True)
class Options:
    desired: State | None  # None: state=absent
    name: str
    peer_names: dict  # VTEP address to peer name, for messages


# -- options ---------------------------------------------------------------------------------------

def check_mac(value: object, path: str) -> str:
    """A unicast Ethernet address, written lower case with colons."""
    text = value.strip().lower() if isinstance(value, str) else ""
    parts = text.split(":")
    if len(parts) != 6 or not all(len(part) == 2 and all(ch in "0123456789abcdef" for ch in part) for part in parts):
        raise ConfigError(path, "is not an Ethernet address (six hexadecimal pairs separated by colons)", value)
    if int(parts[0], 16) & 1:
        raise ConfigError(path, "is a multicast Ethernet address (its first byte is odd): a VTEP needs a unicast one",
                          value)
    return text


def _check_ipv4(value: object, path: str) -> str:
    address = check_ip(value, path)
    if address.version != 4:
        raise ConfigError(path, "must be an IPv4 address: the VXLAN device carries the network's IPv4 family", value)
    return str(address)


def parse_options(params: dict) -> Options:
    """The options, checked; errors name the option (``peers[1].mac``) and the value."""
    name = check_ifname(params["name"], "name")
    if params["state"] == "absent":
        return Options(desired=None, name=name, peer_names={})
    if check_ifname(params["dev"], "dev") == name:
        raise ConfigError("dev", "is the VXLAN device itself: give the underlay interface", params["dev"])
    if not 0 <= params["vni"] <= MAX_VNI:
        raise ConfigError("vni", f"must be between 0 and {MAX_VNI}", params["vni"])
    if not 1 <= params["port"] <= 65535:
        raise ConfigError("port", "must be a UDP port, between 1 and 65535", params["port"])
    local = str(check_ip(params["local"], "local"))
    vtep = _check_ipv4(params["vtep"], "vtep")
    device = Device(name=name, vni=params["vni"], port=params["port"], local=local,
                    dev=check_ifname(params["dev"], "dev"), mac=check_mac(params["mac"], "mac"),
                    addresses=(f"{vtep}/32",))
    neighbours, fdb, names = {}, {}, {}
    for index, peer in enumerate(params["peers"] or []):
        path = f"peers[{index}]"
        peer_vtep = _check_ipv4(peer["vtep"], f"{path}.vtep")
        mac = check_mac(peer["mac"], f"{path}.mac")
        underlay = check_ip(peer["underlay"], f"{path}.underlay")
        if underlay.version != check_ip(local, "local").version:
            raise ConfigError(f"{path}.underlay", f"is of another IP family than local ({local})", peer["underlay"])
        for taken, what in ((neighbours, peer_vtep), (fdb, mac)):
            if what in taken or what in (vtep, device.mac):
                raise ConfigError(path, "has the VTEP address or MAC of another peer or of this host: each host's "
                                  "must be its own", what)
        neighbours[peer_vtep], fdb[mac] = mac, str(underlay)
        names[peer_vtep] = peer.get("name") or peer_vtep
    return Options(desired=State(device=device, neighbours=neighbours, fdb=fdb), name=name, peer_names=names)


# -- the device as iproute2 shows it ----------------------------------------------------------------

def parse_state(name: str, link_json: str, neigh_json: str, fdb_json: str) -> State:
    """The device from ``ip -d -j addr show dev <name>``, ``ip -j neigh show dev <name>`` and
    ``bridge -j fdb show dev <name>``; an empty ``link_json``: no such device. A device of another
    kind by that name is not the module's to change (ConfigError)."""
    if not link_json.strip():
        return State(device=None)
    link = json.loads(link_json)[0]
    info = link.get("linkinfo", {})
    if info.get("info_kind") != "vxlan":
        raise ConfigError("name", f"names an interface of kind {info.get('info_kind', 'unknown')}, not a VXLAN device "
                          "this module made: give the module another name, or remove that interface", name)
    data = info.get("info_data", {})
    addresses = tuple(f"{item['local']}/{item['prefixlen']}" for item in link.get("addr_info", [])
                      if item.get("family") == "inet")
    device = Device(name=name, vni=data.get("id"), port=data.get("port"), local=data.get("local", data.get("local6")),
                    dev=data.get("link"), mac=link.get("address"), learning=bool(data.get("learning", True)),
                    up="UP" in link.get("flags", []), addresses=addresses)
    neighbours = {item["dst"]: item.get("lladdr") for item in json.loads(neigh_json or "[]") if "dst" in item}
    fdb = {item["mac"]: item["dst"] for item in json.loads(fdb_json or "[]") if "dst" in item}
    return State(device=device, neighbours=neighbours, fdb=fdb)


def read_state(host, name: str) -> State:
    """The device named ``name`` as it is now (``ip`` and ``bridge`` through the host)."""
    rc, link_json, err = host.run_command(["ip", "-d", "-j", "addr", "show", "dev", name])
    if rc != 0:
        if "does not exist" in err or "Cannot find device" in err:
            return State(device=None)
        raise CNIError(f"ip addr show dev {name} failed: {err.strip()}")
    outputs = []
    for argv in (["ip", "-j", "neigh", "show", "dev", name], ["bridge", "-j", "fdb", "show", "dev", name]):
        rc, out, err = host.run_command(argv)
        if rc != 0:
            raise CNIError(f"{' '.join(argv)} failed: {err.strip()}")
        outputs.append(out)
    return parse_state(name, link_json, *outputs)


# -- the plan --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One change: what it does, for the operator, and the command that does it."""

    text: str
    argv: tuple


def _make_device(device: Device) -> list:
    return [Step(f"create {device.name} (VNI {device.vni}, port {device.port}, local {device.local} dev {device.dev})",
                 ("ip", "link", "add", device.name, "address", device.mac, "type", "vxlan", "id", str(device.vni),
                  "dstport", str(device.port), "local", device.local, "dev", device.dev, "nolearning"))]


def make_plan(desired: State | None, current: State, peer_names: dict | None = None) -> list:
    """The Steps, in order, that make ``current`` the ``desired`` state (None: no device)."""
    names = peer_names or {}
    if desired is None or desired.device is None:
        return [] if current.device is None else [Step(f"delete {current.device.name}",
                                                       ("ip", "link", "delete", current.device.name))]
    want = desired.device
    steps = []
    have = current
    if have.device is not None and have.device.making != want.making:
        steps.append(Step(f"delete {want.name}, made with other settings", ("ip", "link", "delete", want.name)))
        have = State(device=None)
    if have.device is None:
        steps += _make_device(want)
        have = State(device=Device(**{**want.__dict__, "up": False, "addresses": ()}))
    if have.device.mac != want.mac:
        steps.append(Step(f"set {want.name} address {want.mac}", ("ip", "link", "set", want.name, "address", want.mac)))
    steps += [Step(f"delete address {address} from {want.name}", ("ip", "addr", "delete", address, "dev", want.name))
              for address in have.device.addresses if address not in want.addresses]
    steps += [Step(f"add address {address} to {want.name}", ("ip", "addr", "add", address, "dev", want.name))
              for address in want.addresses if address not in have.device.addresses]
    if not have.device.up:
        steps.append(Step(f"set {want.name} up", ("ip", "link", "set", want.name, "up")))
    for vtep, mac in sorted(desired.neighbours.items()):
        if have.neighbours.get(vtep) != mac:
            steps.append(Step(f"neighbour {vtep} lladdr {mac} ({names.get(vtep, vtep)})",
                              ("ip", "neigh", "replace", vtep, "lladdr", mac, "dev", want.name, "nud", "permanent")))
    steps += [Step(f"delete neighbour {vtep}", ("ip", "neigh", "delete", vtep, "dev", want.name))
              for vtep in sorted(have.neighbours) if vtep not in desired.neighbours]
    peer_of_mac = {mac: names.get(vtep, vtep) for vtep, mac in desired.neighbours.items()}
    for mac, dst in sorted(desired.fdb.items()):
        if have.fdb.get(mac) != dst:
            steps.append(Step(f"fdb {mac} dst {dst} ({peer_of_mac.get(mac, mac)})",
                              ("bridge", "fdb", "replace", mac, "dev", want.name, "dst", dst, "self", "permanent")))
    steps += [Step(f"delete fdb {mac}", ("bridge", "fdb", "delete", mac, "dev", want.name, "dst", dst, "self"))
              for mac, dst in sorted(have.fdb.items()) if mac not in desired.fdb]
    return steps


def describe(state: State | None) -> dict | None:
    """The device as the module returns it; None for no device."""
    if state is None or state.device is None:
        return None
    device = state.device
    return {"name": device.name, "vni": device.vni, "port": device.port, "local": device.local, "dev": device.dev,
            "mac": device.mac, "addresses": list(device.addresses),
            "neighbours": [{"vtep": vtep, "mac": mac} for vtep, mac in sorted(state.neighbours.items())],
            "fdb": [{"mac": mac, "dst": dst} for mac, dst in sorted(state.fdb.items())]}


def apply(host, steps: list) -> None:
    """Run the steps in order; the first refused one raises CNIError naming it and the steps done before it."""
    for done, step in enumerate(steps):
        rc, _out, err = host.run_command(list(step.argv))
        if rc != 0:
            before = "; ".join(earlier.text for earlier in steps[:done]) or "none"
            raise CNIError(f"{step.text}: {' '.join(step.argv)} failed: {err.strip()} (done before it, and kept: "
                           f"{before}; the next run completes the rest)")
