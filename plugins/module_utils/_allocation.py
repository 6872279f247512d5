# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The routed network's allocation of one subnet per member host, as a pure function of the
inventory (members, pins, the cluster CIDR), what the hosts record, and the subnets file's
previous content. No I/O: ``_subnets_file`` reads and writes the file, ``_cluster_subnets_task``
runs the two together under the file's lock.

Stability comes first: a subnet in the file is its host's for good, and a host that leaves
the group keeps its subnet in ``released`` until the operator removes it there. The file is
the source of truth, each host's own record its backup: a lost or partial file is rebuilt from
the records, and a record that disagrees with the file stops everything."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ._errors import ConfigError
from ._identifiers import check_cidr, check_ip
from ._subnets_file import V6

# The file's keys for IPv4 (or a single family) and, with the suffix V6, for a dual-stack
# network's IPv6 subnets.
FAMILY_FILE_KEYS = ("cidr", "host_prefix", "subnets", "released")
FILE_KEYS = FAMILY_FILE_KEYS + tuple(key + V6 for key in FAMILY_FILE_KEYS)
FAMILY_MEMBER_KEYS = ("address", "pin", "recorded")
MEMBER_KEYS = ("address", "pin", "in_play", "recorded", "attachments") + tuple(key + V6 for key in FAMILY_MEMBER_KEYS)
# The role's variable behind each member key, named in the hints of errors.
ROLE_VARIABLES = {"address": "cni_cluster_address", "pin": "cni_cluster_subnet", "cidr": "cni_cluster_cidr",
                  "host_prefix": "cni_cluster_host_prefix"}
BOOLEAN_WORDS = {"true": True, "yes": True, "false": False, "no": False}


@dataclass(frozen=True)
class Cluster:
    """The cluster CIDR and the length of each host's subnet in it."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    host_prefix: int
    suffix: str = ""  # V6 for the IPv6 part of a dual-stack network: its keys and variables end with it

    def key(self, name: str) -> str:
        """The file's, the members' or the options' key ``name`` of this family."""
        return name + self.suffix

    def variable(self, name: str) -> str:
        """The role's variable behind the key ``name``, for the hints of errors."""
        return ROLE_VARIABLES[name] + self.suffix

    def fits(self, subnet) -> bool:
        """Whether ``subnet`` could be a host's subnet of this cluster."""
        return subnet.version == self.network.version and subnet.prefixlen == self.host_prefix \
            and subnet.subnet_of(self.network)

    @property
    def capacity(self) -> int:
        return 2 ** (self.host_prefix - self.network.prefixlen)


@dataclass(frozen=True)
class Member:
    """One host of the group, as the inventory and the host itself describe it."""

    name: str
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    pin: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    in_play: bool
    recorded: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    attachments: int | None


@dataclass(frozen=True)
class FileState:
    """The subnets file's previous content, validated; entries keep the file's order."""

    cidr: str | None
    host_prefix: int | None
    subnets: dict
    released: dict
    suffix: str = ""

    def content(self) -> dict | None:
        if self.cidr is None and self.host_prefix is None and not self.subnets and not self.released:
            return None
        return _content(self.cidr, self.host_prefix, self.subnets, self.released, self.suffix)


@dataclass(frozen=True)
class Claim:
    """A subnet someone holds or asks for, with where it comes from, for overlap errors."""

    subnet: ipaddress.IPv4Network | ipaddress.IPv6Network
    path: str
    label: str
    rank: int  # which of two overlapping claims the error names: the higher (a pin over a file entry)


@dataclass(frozen=True)
class Allocation:
    """The outcome: the file's new content and what the play needs of it."""

    content: dict  # cidr, host_prefix, subnets and released, in the order the file renders them
    subnets: dict  # member -> subnet, for every member whose subnet is known, in inventory order
    addresses: dict  # member -> its address as checked, which the routes to its subnet go via
    released: dict  # host that left the group -> its quarantined subnet
    pending: list  # members with no subnet yet: not in the play, so their record is unknown
    changes: list  # what changed, one sentence each
    changed: bool  # whether the file's content changes


# --- parsing and validating the input ----------------------------------------------------------

def parse_cluster(cidr, host_prefix: int, suffix: str = "") -> Cluster:
    """``host_prefix`` an integer, as the action's argument spec makes it."""
    network = check_cidr(cidr, "cidr" + suffix)
    if suffix == V6 and network.version != 6:
        raise ConfigError("cidr" + suffix, "must be an IPv6 network (the IPv6 part of a dual-stack network)", cidr)
    if not network.prefixlen <= host_prefix <= network.max_prefixlen:
        raise ConfigError("host_prefix" + suffix, f"must lie between the cidr's prefix length {network.prefixlen} and "
                                                  f"{network.max_prefixlen}: each host's subnet is a part of {network}",
                          host_prefix)
    return Cluster(network, host_prefix, suffix)


def _boolean(path: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[value.lower()]
    raise ConfigError(path, "must be true or false", value)


def _count(path: str, value) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(path, "must be a number of attachments (0 or more), or null when unknown", value)
    return value


def _address(path: str, name: str, value, cluster: Cluster):
    if value is None or value == "":
        family, default = ("IPv6 ", "") if cluster.suffix else ("", ", by default ansible_host")
        raise ConfigError(path, f"is required: the address the other members route {name}'s {family}subnet through "
                                f"({cluster.variable('address')}{default})", value)
    address = check_ip(value, path, f"routes to {name}'s subnet go via an address, not a host name")
    if address.version != cluster.network.version:
        raise ConfigError(path, f"is an IPv{address.version} address, but the cluster cidr {cluster.network} "
                                f"is IPv{cluster.network.version}", value)
    return address


def _pin(path: str, value, cluster: Cluster):
    if value is None or value == "":
        return None
    pin = check_cidr(value, path)
    if pin.version != cluster.network.version:
        raise ConfigError(path, f"is IPv{pin.version}, but the cluster cidr {cluster.network} is "
                                f"IPv{cluster.network.version}", value)
    if not pin.subnet_of(cluster.network):
        raise ConfigError(path, f"lies outside the cluster cidr {cluster.network}", value)
    if pin.prefixlen != cluster.host_prefix:
        raise ConfigError(path, f"is a /{pin.prefixlen}, but each host's subnet is a /{cluster.host_prefix} "
                                f"({cluster.key('host_prefix')})", value)
    return pin


def parse_member(name, spec, cluster: Cluster) -> Member:
    if not isinstance(name, str) or not name:
        raise ConfigError("members", "each key must be a host name", name)
    if not isinstance(spec, dict):
        raise ConfigError(f"members.{name}", "must be a mapping with address, pin, in_play, recorded and "
                                             "attachments", spec)
    unknown = sorted(str(key) for key in spec if key not in MEMBER_KEYS)
    if unknown:
        raise ConfigError(f"members.{name}", f"unknown key {unknown[0]} (known: {', '.join(MEMBER_KEYS)})",
                          unknown[0])
    path = f"members.{name}"
    address, pin, recorded = (cluster.key(key) for key in FAMILY_MEMBER_KEYS)
    recorded_value = spec.get(recorded)
    return Member(
        name=name,
        address=_address(f"{path}.{address}", name, spec.get(address), cluster),
        pin=_pin(f"{path}.{pin}", spec.get(pin), cluster),
        in_play=_boolean(f"{path}.in_play", spec.get("in_play", True)),
        recorded=None if recorded_value in (None, "") else check_cidr(recorded_value, f"{path}.{recorded}"),
        attachments=_count(f"{path}.attachments", spec.get("attachments")),
    )


def parse_members(members, cluster: Cluster) -> list:
    if not isinstance(members, dict):
        raise ConfigError("members", "must be a mapping of host name to its address and state", members)
    parsed = [parse_member(name, spec, cluster) for name, spec in members.items()]
    owners = {}
    for member in parsed:
        other = owners.setdefault(member.address, member.name)
        if other != member.name:
            raise ConfigError(f"members.{member.name}.{cluster.key('address')}",
                              f"is also {other}'s address: each member needs an address of its own", str(member.address))
    if len(parsed) > cluster.capacity:
        raise ConfigError(cluster.key("cidr"), f"is too small for the group: it holds {cluster.capacity} subnets of "
                                               f"/{cluster.host_prefix}, and the group has {len(parsed)} members",
                          str(cluster.network))
    return parsed


def _entries(previous: dict, key: str, file_label: str) -> dict:
    section = previous.get(key)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ConfigError(f"{key} in {file_label}", "must be a mapping of host name to subnet", section)
    entries = {}
    for host, value in section.items():
        if not isinstance(host, str) or not host:
            raise ConfigError(f"{key} in {file_label}", "each key must be a host name", host)
        entries[host] = check_cidr(value, f"{key}.{host} in {file_label}")
    return entries


def parse_file(previous, file_label: str, suffix: str = "") -> FileState:
    """The file's previous content (None when there is none), checked as an operator may have
    edited it by hand; of its keys, those of the family ``suffix`` names."""
    if previous is None:
        return FileState(None, None, {}, {}, suffix)
    if not isinstance(previous, dict):
        raise ConfigError(file_label, f"must be a mapping with the keys {', '.join(FILE_KEYS)}", previous)
    unknown = sorted(str(key) for key in previous if key not in FILE_KEYS)
    if unknown:
        raise ConfigError(file_label, f"unknown key {unknown[0]} (known: {', '.join(FILE_KEYS)})", unknown[0])
    cidr_key, prefix_key, subnets_key, released_key = (key + suffix for key in FAMILY_FILE_KEYS)
    cidr = previous.get(cidr_key)
    if cidr is not None:
        cidr = str(check_cidr(cidr, f"{cidr_key} in {file_label}"))
    host_prefix = previous.get(prefix_key)
    if host_prefix is not None and (isinstance(host_prefix, bool) or not isinstance(host_prefix, int)):
        raise ConfigError(f"{prefix_key} in {file_label}", "must be an integer prefix length", host_prefix)
    subnets = _entries(previous, subnets_key, file_label)
    released = _entries(previous, released_key, file_label)
    for host in subnets:
        if host in released:
            raise ConfigError(f"{released_key}.{host} in {file_label}", f"{host} is also in {subnets_key}: a host is "
                                                                        "either a member or released", str(released[host]))
    claims = [Claim(subnet, f"{subnets_key}.{host} in {file_label}", f"the subnet of {host} in {file_label}", 0)
              for host, subnet in subnets.items()]
    claims += [Claim(subnet, f"{released_key}.{host} in {file_label}", f"the subnet {host} released in {file_label}", 0)
               for host, subnet in released.items()]
    _check_no_overlap(claims)
    return FileState(cidr, host_prefix, subnets, released, suffix)


def _check_no_overlap(claims: list) -> None:
    """Fail on the first two claims whose subnets overlap (sorted by start: a claim overlaps an
    earlier one exactly when it starts before the furthest end seen so far)."""
    for version in (4, 6):
        ordered = sorted((c for c in claims if c.subnet.version == version),
                         key=lambda c: (int(c.subnet.network_address), c.subnet.prefixlen))
        widest = None
        for claim in ordered:
            if widest is not None and int(claim.subnet.network_address) <= int(widest.subnet.broadcast_address):
                # The error names the higher-ranked claim, or on a tie the later one (a duplicate line).
                first, second = (widest, claim) if widest.rank > claim.rank else (claim, widest)
                relation = "is also" if first.subnet == second.subnet else f"overlaps {second.subnet},"
                raise ConfigError(first.path, f"{relation} {second.label}", str(first.subnet))
            if widest is None or claim.subnet.broadcast_address > widest.subnet.broadcast_address:
                widest = claim


# --- deciding each member's subnet -------------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    """One member's subnet: what it has (in the file, in released, or in its record), and what it
    gets (None: a new subnet, or none while it is pending)."""

    current: object
    source: str  # where current comes from: "file", "released", "record", or "" when it has none
    desired: object
    moved_by: str  # what moves it from current to desired: "pin", "cidr" (or host_prefix), or ""


def _decide(member: Member, entry, released_entry, cluster: Cluster, network: str, file_label: str) -> Decision:
    filed, source = (entry, "file") if entry else (released_entry, "released") if released_entry else (None, "")
    if filed and member.recorded and member.recorded != filed:
        section = cluster.key("subnets" if source == "file" else "released")
        raise ConfigError(f"members.{member.name}.{cluster.key('recorded')}",
                          f"{member.name} records {member.recorded} as its subnet, but {section}.{member.name} in "
                          f"{file_label} says {filed}: correct the file to the subnet the host uses, or remove the "
                          "host's record (cnikit.cni.cni_cluster_member state=absent, after detaching its "
                          "workloads)", str(member.recorded))
    current = filed or member.recorded
    source = source or ("record" if current else "")
    if member.pin:
        desired = member.pin
    elif current and cluster.fits(current):
        desired = current
    else:
        desired = None
    moved_by = ""
    if current and desired != current:
        moved_by = "pin" if member.pin else "cidr"
        _refuse_move_of_live_host(member, current, desired, moved_by, cluster, network)
    return Decision(current, source, desired, moved_by)


def _refuse_move_of_live_host(member: Member, current, desired, moved_by: str, cluster: Cluster, network: str) -> None:
    """A subnet may move only on a host with no attachments of the network: theirs would keep
    the old gateway, which the bridge no longer has, and go offline."""
    if member.attachments == 0:
        return
    if moved_by == "pin":
        move = f"{member.name}'s subnet would move from {current} to its pin {desired} ({cluster.variable('pin')})"
        back = f"set its {cluster.variable('pin')} back to {current}"
        path = f"members.{member.name}.{cluster.key('pin')}"
    else:
        move = (f"{member.name}'s subnet {current} is not a /{cluster.host_prefix} of the cluster cidr "
                f"{cluster.network}, so it would move")
        back = f"set {cluster.variable('cidr')} and {cluster.variable('host_prefix')} back to what holds it"
        path = cluster.key("cidr")
    if member.attachments is None and not member.in_play:
        why = f"its attachments are unknown ({member.name} is not in this play)"
        out = f"run the play with {member.name} in it, after detaching its workloads"
    elif member.attachments is None:
        why = f"its attachments of the network {network!r} are unknown"
        out = "detach its workloads and give its attachments as 0"
    else:
        why = f"it has {member.attachments} attachment(s) of the network {network!r}, which would lose their gateway"
        out = "detach them first (cnikit.cni.cni_attach state=absent) and run again"
    raise ConfigError(path, f"{move}, but {why}: {out}, or {back}", str(desired or cluster.network))


def _claims(members: list, decisions: dict, released: dict, cluster: Cluster, file_label: str) -> list:
    claims = []
    for member in members:
        decision = decisions[member.name]
        if decision.desired is None:
            continue
        if member.pin and member.pin != decision.current:
            path, label, rank = f"members.{member.name}.{cluster.key('pin')}", f"the pin of {member.name}", 2
        elif decision.source == "record":
            path, label, rank = f"members.{member.name}.{cluster.key('recorded')}", f"the subnet {member.name} records", 1
        else:
            section = cluster.key("subnets" if decision.source == "file" else "released")
            path = f"{section}.{member.name} in {file_label}"
            label, rank = f"the subnet of {member.name} in {file_label}", 0
        claims.append(Claim(decision.desired, path, label, rank))
    claims += [Claim(subnet, f"{cluster.key('released')}.{host} in {file_label}",
                     f"the subnet {host} released in {file_label} (remove it there to hand it out again)", 0)
               for host, subnet in released.items()]
    return claims


def _free_subnets(cluster: Cluster, taken: list):
    """The /host_prefix subnets of the cluster that overlap nothing taken, lowest first. Jumps
    past each taken range, so a huge IPv6 cidr costs no more than a small one."""
    step = 2 ** (cluster.network.max_prefixlen - cluster.host_prefix)
    start = int(cluster.network.network_address)
    last_start = int(cluster.network.broadcast_address) - step + 1
    candidate = start
    for first, last in _merged(taken, cluster.network.version):
        while candidate + step - 1 < first and candidate <= last_start:
            yield type(cluster.network)((candidate, cluster.host_prefix))
            candidate += step
        if last >= candidate:
            candidate = start + ((last + 1 - start + step - 1) // step) * step
    while candidate <= last_start:
        yield type(cluster.network)((candidate, cluster.host_prefix))
        candidate += step


def _merged(subnets: list, version: int) -> list:
    """The address ranges of ``subnets`` of one IP version as sorted, disjoint (first, last) pairs."""
    merged = []
    for first, last in sorted((int(s.network_address), int(s.broadcast_address)) for s in subnets
                              if s.version == version):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def _content(cidr, host_prefix, subnets: dict, released: dict, suffix: str = "") -> dict:
    return {"cidr" + suffix: cidr, "host_prefix" + suffix: host_prefix,
            "subnets" + suffix: {host: str(subnet) for host, subnet in subnets.items()},
            "released" + suffix: {host: str(subnet) for host, subnet in released.items()}}


def allocate(cidr, host_prefix, network: str, members, previous, file_label: str = "the subnets file",
             suffix: str = "", file_exists: bool | None = None) -> Allocation:
    """The file's new content and each member's subnet; a ConfigError (naming the host, or the
    file's key, and the value) for bad input, before anything is decided.

    ``members`` maps each host of the group, in inventory order, to ``address``, ``pin``,
    ``in_play``, ``recorded`` (its own record of its subnet, null when unknown) and
    ``attachments`` (its attachments of ``network``, null when unknown); ``previous`` is the
    file's parsed content, None when there is none. With ``suffix`` V6, the IPv6 part of a
    dual-stack network: the members' and the file's keys of that family (``address_v6``,
    ``subnets_v6``...), and ``file_exists`` whether the file exists at all (its IPv6 part may
    be new)."""
    cluster = parse_cluster(cidr, host_prefix, suffix)
    parsed = parse_members(members, cluster)
    state = parse_file(previous, file_label, suffix)
    if file_exists is None:
        file_exists = state.content() is not None
    names = {member.name for member in parsed}
    decisions = {member.name: _decide(member, state.subnets.get(member.name), state.released.get(member.name),
                                      cluster, network, file_label)
                 for member in parsed}
    released = {host: subnet for host, subnet in state.released.items() if host not in names}
    released.update((host, subnet) for host, subnet in state.subnets.items() if host not in names)
    claims = _claims(parsed, decisions, released, cluster, file_label)
    _check_no_overlap(claims)
    pending = [m.name for m in parsed if decisions[m.name].current is None and not m.in_play]
    # Without a file, the subnets that members outside the play record are unknown: a new one
    # could be one of theirs. With a file, it is the truth, and a member it lacks is new.
    unknown = [] if file_exists else pending
    final = _assign_new_subnets(parsed, decisions, pending, unknown, cluster, [c.subnet for c in claims],
                                len(released), file_label)
    subnets = {host: final[host] for host in state.subnets if host in final}
    subnets.update((m.name, final[m.name]) for m in parsed if m.name in final and m.name not in subnets)
    content = _content(str(cluster.network), cluster.host_prefix, subnets, released, suffix)
    return Allocation(
        content=content,
        subnets={m.name: str(final[m.name]) for m in parsed if m.name in final},
        addresses={m.name: str(m.address) for m in parsed},
        released=content[cluster.key("released")],
        pending=pending,
        changes=_changes(parsed, decisions, final, state, cluster, released, file_label),
        changed=content != state.content(),
    )


def _assign_new_subnets(members: list, decisions: dict, pending: list, unknown: list, cluster: Cluster,
                        taken: list, released_count: int, file_label: str) -> dict:
    """Each member's final subnet: its decision's, or the lowest free one for a member in the
    play that has none, in inventory order. Pending members get none; while the subnets of
    ``unknown`` members may be taken, no new one is handed out."""
    final, new = {}, 0
    free = _free_subnets(cluster, taken)
    for member in members:
        decision = decisions[member.name]
        if member.name in pending:
            continue
        if decision.desired is not None:
            final[member.name] = decision.desired
            continue
        if unknown:
            raise ConfigError(f"members.{member.name}",
                              f"needs a new subnet of {cluster.network}, but {file_label} does not exist, and {', '.join(unknown)} (in the "
                              "group, not in this play) may hold one recorded on the host that this run cannot see: "
                              "run the play with them in it, which rebuilds the file from their records",
                              member.name)
        subnet = next(free, None)
        if subnet is None:
            raise ConfigError(f"members.{member.name}",
                              f"no free /{cluster.host_prefix} is left in the cluster cidr {cluster.network}: "
                              f"{len(taken) - released_count + new} taken by members, {released_count} released "
                              f"(remove hosts from {cluster.key('released')} in the file to hand their subnets out again, or widen the "
                              "cidr)", str(cluster.network))
        final[member.name] = subnet
        new += 1
    return final


def _changes(members: list, decisions: dict, final: dict, state: FileState, cluster: Cluster, released: dict,
             file_label: str) -> list:
    changes = []
    if state.cidr is not None and state.cidr != str(cluster.network):
        changes.append(f"{cluster.key('cidr')}: {state.cidr} -> {cluster.network}")
    if state.host_prefix is not None and state.host_prefix != cluster.host_prefix:
        changes.append(f"{cluster.key('host_prefix')}: {state.host_prefix} -> {cluster.host_prefix}")
    for member in members:
        decision, subnet = decisions[member.name], final.get(member.name)
        if subnet is None:
            continue
        if decision.current and subnet != decision.current:
            why = "its pin" if decision.moved_by == "pin" else f"cidr {cluster.network}, host_prefix {cluster.host_prefix}"
            changes.append(f"{member.name}: moved from {decision.current} to {subnet} ({why}; it has no attachments)")
        elif decision.source == "released":
            changes.append(f"{member.name}: rejoined the group, {subnet} back from released")
        elif decision.source == "record":
            changes.append(f"{member.name}: {subnet} restored from its own record (no entry in {file_label})")
        elif decision.source == "":
            how = "pinned" if member.pin else "allocated"
            changes.append(f"{member.name}: {how} {subnet}")
    for host, subnet in released.items():
        if host in state.subnets:
            changes.append(f"{host}: left the group, {subnet} released (not handed out again until removed from "
                           f"{cluster.key('released')} in {file_label})")
    return changes


def allocate_stack(cidr, host_prefix, cidr_v6, host_prefix_v6, network: str, members, previous,
                   file_label: str = "the subnets file") -> tuple:
    """:func:`allocate` for a network of one family (``cidr_v6`` None) or dual stack (``cidr``
    IPv4, ``cidr_v6`` IPv6, each member's ``address_v6``, ``pin_v6`` and ``recorded_v6`` its
    IPv6 part): ``(allocation, allocation_v6 or None, content)``, content the whole file's. Both
    families follow the same rules, each in its own keys of the file; membership, presence in
    the play and attachments are shared."""
    if cidr_v6 in (None, ""):
        _refuse_dropping_ipv6(previous, file_label)
        allocation = allocate(cidr, host_prefix, network, members, previous, file_label)
        return allocation, None, allocation.content
    if check_cidr(cidr, "cidr").version != 4:
        raise ConfigError("cidr", "is IPv6, but with cidr_v6 (dual stack) cidr is the IPv4 network and cidr_v6 the "
                                  "IPv6 one", cidr)
    allocation = allocate(cidr, host_prefix, network, members, previous, file_label)
    allocation_v6 = allocate(cidr_v6, host_prefix_v6, network, members, previous, file_label, suffix=V6,
                             file_exists=previous is not None)
    return allocation, allocation_v6, dict(allocation.content, **allocation_v6.content)


def _refuse_dropping_ipv6(previous, file_label: str) -> None:
    """Leaving cidr_v6 out of a network whose file holds IPv6 subnets would take every host's
    IPv6 subnet away, workloads and all: that is for the operator to do in the file."""
    if not isinstance(previous, dict):
        return
    held = previous.get("cidr" + V6) or previous.get("subnets" + V6) or previous.get("released" + V6)
    if held:
        raise ConfigError("cidr" + V6, f"is not set, but {file_label} holds the network's IPv6 subnets "
                                       f"(cidr{V6} {previous.get('cidr' + V6)}): set cni_cluster_cidr{V6} back to it, or, "
                                       f"to remove IPv6, detach the network's workloads and delete the keys ending in "
                                       f"{V6} from the file", None)


def first_address(subnet: str) -> str:
    """The first usable address of ``subnet`` with its prefix length, as the bridge's gateway
    has it and flannel's FLANNEL_SUBNET writes it (``10.244.3.1/24``)."""
    network = ipaddress.ip_network(subnet)
    first = network.network_address + 1 if network.num_addresses > 1 else network.network_address
    return f"{first}/{network.prefixlen}"
