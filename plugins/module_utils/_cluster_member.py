# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""What a member host of a routed network keeps on itself (cni_cluster_member's task is
``_cluster_member_task``):

- its record of the network (``<cache_dir>/cnikit-cluster/<network>.json``: the cluster CIDR,
  its own subnet, whether it masquerades, and the forwarding sysctl as it was before the first
  run). This file is the record format's one home; cni_info reads records through
  :func:`read_records`.
- IP forwarding (``net.ipv4.ip_forward``, or ``net.ipv6.conf.all.forwarding`` for an IPv6 CIDR),
  written through /proc/sys.
- the iptables chains it owns: ``CNIKIT-FWD-<hash>`` in the filter table, accepting forwarded
  traffic from and to the cluster CIDR, jumped to from FORWARD (so that a FORWARD policy DROP
  does not stop the cluster's traffic), and with masquerading ``CNIKIT-MASQ-<hash>`` in the nat
  table, jumped to from POSTROUTING for traffic from the cluster CIDR, which returns for traffic
  to the cluster CIDR (a receiving workload sees the sender's own address) and masquerades the
  rest but multicast, as the bridge plugin's ipMasq does for a single subnet.

The state is read with ``iptables-save -t <table>`` and only what differs is changed, with
``iptables -w`` through the host's ``run_command``; ``state=absent`` removes exactly these
chains and their jumps, restores the sysctl (unless another network of the same IP version still
has a record, which it then hands the value on to) and deletes the record."""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import shlex
from dataclasses import dataclass, field
from typing import Callable

from . import _fileio
from ._cache_dir import open_subdir
from ._errors import CNIError, ConfigError
from ._identifiers import check_cidr


RECORD_DIR = "cnikit-cluster"
RECORD_SUFFIX = ".json"
RECORD_FORMAT = 1
RECORD_FIELDS = ("network", "cidr", "subnet", "masquerade", "ip_forward_before")
# A dual-stack network's IPv6 part; a record of one family has none of them, and reads as it
# always did. accept_ra_before: the interfaces whose accept_ra was 1 when IPv6 forwarding was
# turned on, set to 2 since (with forwarding on, 1 drops the default route a router advertises).
RECORD_FIELDS_V6 = ("cidr_v6", "subnet_v6", "ip6_forward_before")
ACCEPT_RA_BEFORE = "accept_ra_before"
PROC_SYS = "/proc/sys"
FORWARDING_SYSCTL = {4: "net.ipv4.ip_forward", 6: "net.ipv6.conf.all.forwarding"}
FORWARDING_ON = 1
ACCEPT_RA_SYSCTL = "net.ipv6.conf.{}.accept_ra"
ACCEPT_RA_WITHOUT_FORWARDING, ACCEPT_RA_ALWAYS = 1, 2
PROC_NET = "/proc/net"
RTF_DEFAULT, RTF_ADDRCONF = 0x00010000, 0x00040000  # an IPv6 route's flags: a default route learned from an RA
IPTABLES = {4: "iptables", 6: "ip6tables"}
MULTICAST = {4: "224.0.0.0/4", 6: "ff00::/8"}
CHAIN_PREFIX = {"forward": "CNIKIT-FWD-", "masquerade": "CNIKIT-MASQ-"}
CHAIN_HASH_CHARS = 8  # CNIKIT-MASQ- and 8 characters: 20, within iptables' 28


# -- the record ---------------------------------------------------------------------------------

class RecordError(CNIError):
    """A record that cannot be read or is not in the record format."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"cluster record {path}: {reason}")

    def to_dict(self) -> dict:
        return {"msg": str(self), "path": self.path}


def record_path(cache_dir: str, network: str) -> str:
    return os.path.join(cache_dir, RECORD_DIR, network + RECORD_SUFFIX)


def record_text(record: dict) -> str:
    """The file's content: the record's fields and the format number, as indented JSON."""
    return json.dumps(dict(record, format=RECORD_FORMAT), indent=2, sort_keys=True) + "\n"


def parse_record(data: bytes, path: str, network: str) -> dict:
    """The record of ``network`` in ``data`` (the bytes of ``path``), its fields checked."""
    try:
        loaded = json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError is one
        raise RecordError(path, f"not JSON ({exc})") from None
    if not isinstance(loaded, dict):
        raise RecordError(path, f"not a JSON object but {type(loaded).__name__}")
    if loaded.get("format") != RECORD_FORMAT:
        raise RecordError(path, f"format {loaded.get('format')!r}, this collection reads format {RECORD_FORMAT}")
    missing = [name for name in RECORD_FIELDS if name not in loaded]
    if missing:
        raise RecordError(path, f"lacks {', '.join(missing)}")
    record = {name: loaded[name] for name in RECORD_FIELDS}
    if record["network"] != network:
        raise RecordError(path, f"holds network {record['network']!r}, its file name says {network!r}")
    present_v6 = [name for name in RECORD_FIELDS_V6 if name in loaded]
    if present_v6 and len(present_v6) != len(RECORD_FIELDS_V6):
        raise RecordError(path, f"has {', '.join(present_v6)} but lacks "
                                f"{', '.join(name for name in RECORD_FIELDS_V6 if name not in loaded)}")
    record.update((name, loaded[name]) for name in present_v6)
    if ACCEPT_RA_BEFORE in loaded:
        record[ACCEPT_RA_BEFORE] = _accept_ra_before(loaded[ACCEPT_RA_BEFORE], path)
    for name in ("cidr", "subnet") + (("cidr_v6", "subnet_v6") if present_v6 else ()):
        try:
            record[name] = str(check_cidr(record[name], name))
        except ConfigError as exc:
            raise RecordError(path, str(exc)) from None
    if not isinstance(record["masquerade"], bool):
        raise RecordError(path, f"masquerade {record['masquerade']!r} is not true or false")
    for name in ("ip_forward_before", "ip6_forward_before"):
        if name in record and type(record[name]) is not int:  # pylint: disable=unidiomatic-typecheck  # bool is an int
            raise RecordError(path, f"{name} {record[name]!r} is not an integer")
    return record


def _accept_ra_before(value, path: str) -> dict:
    if not isinstance(value, dict) or not all(isinstance(name, str) and _is_sysctl_value(before)
                                              for name, before in value.items()):
        raise RecordError(path, f"accept_ra_before {value!r} is not a mapping of interface name to integer")
    return value


def _is_sysctl_value(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # bool is an int, and not a sysctl's value


def read_record(cache_dir: str, network: str) -> dict | None:
    """The record of ``network``, None when there is none; RecordError when it cannot be read,
    ConfigError naming cache_dir when its record directory is not one the collection may use."""
    with open_subdir(cache_dir, RECORD_DIR) as directory:
        return None if directory is None else _read_record_at(directory, cache_dir, network)


def read_records(cache_dir: str) -> tuple:
    """Every record under ``cache_dir``: ({network: record}, {network: RecordError}), the
    network named by the file's name."""
    records, problems = {}, {}
    with open_subdir(cache_dir, RECORD_DIR) as directory:
        for name in sorted(os.listdir(directory)) if directory is not None else []:
            if name.startswith(".") or not name.endswith(RECORD_SUFFIX):
                continue  # a writer's temporary file, or not ours
            network = name[:-len(RECORD_SUFFIX)]
            try:
                record = _read_record_at(directory, cache_dir, network)
            except RecordError as exc:
                problems[network] = exc
                continue
            if record is not None:  # removed meanwhile
                records[network] = record
    return records, problems


def _read_record_at(directory: int, cache_dir: str, network: str) -> dict | None:
    """:func:`read_record` in the record directory open as ``directory``."""
    path = record_path(cache_dir, network)
    try:
        data = _fileio.read_regular_at(directory, os.path.basename(path))
    except OSError as exc:  # NotARegularFile is one
        raise RecordError(path, exc.strerror) from None
    return None if data is None else parse_record(data, path, network)


def write_record(cache_dir: str, record: dict) -> None:
    """Write the record atomically, creating its directory as the cache's others (0700)."""
    with open_subdir(cache_dir, RECORD_DIR, create=True) as directory:
        _fileio.atomic_write_at(directory, record["network"] + RECORD_SUFFIX, record_text(record).encode(), 0o644)


def delete_record(cache_dir: str, network: str) -> bool:
    """Remove the record (and temporary files a killed writer left); True if it existed."""
    with open_subdir(cache_dir, RECORD_DIR) as directory:
        return directory is not None and _fileio.remove_written_file_at(directory, network + RECORD_SUFFIX)


# -- forwarding ---------------------------------------------------------------------------------

def sysctl_path(name: str) -> str:
    return os.path.join(PROC_SYS, *name.split("."))


def read_sysctl(name: str) -> int:
    with open(sysctl_path(name), encoding="ascii") as handle:
        return int(handle.read().strip())


def write_sysctl(name: str, value: int) -> None:
    with open(sysctl_path(name), "w", encoding="ascii") as handle:
        handle.write(f"{value}\n")


# -- the owned chains ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OwnedChain:
    """A chain this module owns: its table, its rules, and the built-in chain (``hook``) whose
    rule ``jump`` sends traffic to it. Rules are token tuples as ``iptables-save`` spells them
    after ``-A <chain>``, so that what is read compares equal to what is wanted."""

    table: str
    name: str
    hook: str
    rules: tuple = ()
    jump: tuple = ()


def chain_names(network: str) -> dict:
    """The names of the network's chains: a hash of its name keeps them within iptables' 28
    characters whatever the name's length, and the same on every run and host."""
    digest = hashlib.sha256(network.encode()).hexdigest()[:CHAIN_HASH_CHARS].upper()
    return {purpose: prefix + digest for purpose, prefix in CHAIN_PREFIX.items()}


def jump_comment(network: str) -> str:
    """The comment on the jumps, naming the network for whoever reads the host's rules."""
    return f"cnikit.cni cluster network {network}"


def forward_chain(network: str, cidr: str = "") -> OwnedChain:
    """The filter chain, with its rules and jump when ``cidr`` is given (only its name and
    hook when removing it)."""
    name = chain_names(network)["forward"]
    if not cidr:
        return OwnedChain("filter", name, "FORWARD")
    return OwnedChain("filter", name, "FORWARD",
                      rules=(("-s", cidr, "-j", "ACCEPT"), ("-d", cidr, "-j", "ACCEPT")),
                      jump=("-m", "comment", "--comment", jump_comment(network), "-j", name))


def masquerade_chain(network: str, cidr: str = "") -> OwnedChain:
    """The nat chain, as :func:`forward_chain`."""
    name = chain_names(network)["masquerade"]
    if not cidr:
        return OwnedChain("nat", name, "POSTROUTING")
    multicast = MULTICAST[ipaddress.ip_network(cidr).version]
    return OwnedChain("nat", name, "POSTROUTING",
                      rules=(("-d", cidr, "-j", "RETURN"), ("!", "-d", multicast, "-j", "MASQUERADE")),
                      jump=("-s", cidr, "-m", "comment", "--comment", jump_comment(network), "-j", name))


@dataclass
class SavedTable:
    """One table as ``iptables-save -t <table>`` prints it: its chains, and each chain's rules
    as token tuples (without ``-A <chain>``)."""

    chains: set = field(default_factory=set)
    rules: dict = field(default_factory=dict)

    def rules_of(self, chain: str) -> list:
        return self.rules.get(chain, [])

    def jumps_to(self, hook: str, chain: str) -> list:
        """The rules of ``hook`` that jump (or go) to ``chain``."""
        return [rule for rule in self.rules_of(hook) if _target(rule) == chain]


def _target(rule: tuple) -> str | None:
    for option, value in zip(rule, rule[1:]):
        if option in ("-j", "-g"):
            return value
    return None


def parse_saved_table(text: str) -> SavedTable:
    table = SavedTable()
    for line in text.splitlines():
        if line.startswith(":"):
            table.chains.add(line[1:].split()[0])
        elif line.startswith("-A "):
            try:
                tokens = shlex.split(line)
            except ValueError as exc:
                raise CNIError(f"cannot read the iptables-save line {line!r}: {exc}") from None
            table.rules.setdefault(tokens[1], []).append(tuple(tokens[2:]))
    return table


def plan_chain(saved: SavedTable, chain: OwnedChain) -> list:
    """The iptables arguments (after ``-t <table>``) that make ``chain`` hold exactly its rules
    and its hook exactly one jump to it. A missing jump goes first in the hook, ahead of rules
    that would drop the traffic; a jump already there stays where it is, so that a re-run
    does not fight another tool that also puts its jump first."""
    if chain.name not in saved.chains:
        args = [("-N", chain.name)] + [("-A", chain.name, *rule) for rule in chain.rules]
    else:
        args = _rule_edits(chain.name, saved.rules_of(chain.name), list(chain.rules))
    jumps = saved.jumps_to(chain.hook, chain.name)
    if chain.jump in jumps:
        jumps.remove(chain.jump)
    else:
        args.append(("-I", chain.hook, "1", *chain.jump))
    # The new jump is in before a stale one (another CIDR's) goes: no moment without one.
    args.extend(("-D", chain.hook, *jump) for jump in jumps)
    return args


def plan_removal(saved: SavedTable, chain: OwnedChain) -> list:
    """The iptables arguments that remove ``chain`` and the jumps to it from its hook."""
    if chain.name not in saved.chains:
        return []
    return [("-D", chain.hook, *jump) for jump in saved.jumps_to(chain.hook, chain.name)] + \
        [("-F", chain.name), ("-X", chain.name)]


def _rule_edits(chain: str, current: list, desired: list) -> list:
    """Insertions and deletions (by position) turning the rules ``current`` of ``chain`` into
    ``desired``, keeping the longest run of rules the two share in order. Every insertion comes
    before any deletion, so a rule being replaced is never missing in between."""
    if current == desired:
        return []
    kept = dict((d, c) for c, d in _common_subsequence(current, desired))
    layout, next_current, args = [], 0, []  # layout: the chain after the insertions (None: new)
    for index, rule in enumerate(desired):
        if index in kept:
            layout.extend(range(next_current, kept[index] + 1))
            next_current = kept[index] + 1
        else:
            args.append(("-I", chain, str(len(layout) + 1), *rule))
            layout.append(None)
    layout.extend(range(next_current, len(current)))
    kept_current = set(kept.values())
    stale = [position for position, old in enumerate(layout, 1) if old is not None and old not in kept_current]
    args.extend(("-D", chain, str(position)) for position in reversed(stale))
    return args


def _common_subsequence(first: list, second: list) -> list:
    """The index pairs (i, j) of a longest common subsequence of the two lists."""
    lengths = [[0] * (len(second) + 1) for _row in range(len(first) + 1)]
    for i in range(len(first) - 1, -1, -1):
        for j in range(len(second) - 1, -1, -1):
            lengths[i][j] = lengths[i + 1][j + 1] + 1 if first[i] == second[j] else \
                max(lengths[i + 1][j], lengths[i][j + 1])
    pairs, i, j = [], 0, 0
    while i < len(first) and j < len(second):
        if first[i] == second[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif lengths[i + 1][j] >= lengths[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def rule_text(chain: str, rule: tuple) -> str:
    """``-A <chain> <rule>`` as iptables-save prints it."""
    return " ".join(["-A", chain] + [f'"{token}"' if not token or " " in token else token for token in rule])


def owned_lines(saved: SavedTable, chain: OwnedChain) -> list:
    """The chain, its jumps and its rules in ``saved``, one ``iptables -S`` line each."""
    if chain.name not in saved.chains:
        return []
    return [f"-N {chain.name}"] + [rule_text(chain.hook, jump) for jump in saved.jumps_to(chain.hook, chain.name)] + \
        [rule_text(chain.name, rule) for rule in saved.rules_of(chain.name)]


def wanted_lines(chain: OwnedChain) -> list:
    """The lines of :func:`owned_lines` once ``chain`` is as wanted."""
    return [f"-N {chain.name}", rule_text(chain.hook, chain.jump)] + [rule_text(chain.name, rule) for rule in chain.rules]


def read_table(host, version: int, table: str) -> SavedTable:
    argv = [f"{IPTABLES[version]}-save", "-t", table]
    rc, out, err = host.run_command(argv)
    if rc != 0:
        hint = " (is the iptables package installed?)" if rc == 127 else ""
        raise CNIError(f"{' '.join(argv)} failed with exit status {rc}{hint}: {(err or out).strip()}")
    return parse_saved_table(out)


# -- the plan -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """One change: what it is, in words (or as the command it runs), and how to make it."""

    description: str
    apply: Callable[[], None]


@dataclass
class Plan:
    steps: list = field(default_factory=list)
    before: list = field(default_factory=list)  # lines of the diff
    after: list = field(default_factory=list)
    # What the network keeps once the plan is carried out, for a replay without the module (the
    # routed_network role's boot script): the sysctls in the order to write them, and the chains.
    sysctls: list = field(default_factory=list)
    chains: list = field(default_factory=list)

    def keep_sysctl(self, name: str, value: int) -> None:
        self.sysctls.append({"name": name, "path": sysctl_path(name), "value": value})

    def keep_chain(self, version: int, chain: OwnedChain) -> None:
        self.chains.append({"command": IPTABLES[version], "table": chain.table, "chain": chain.name,
                            "hook": chain.hook, "jump": list(chain.jump), "rules": [list(rule) for rule in chain.rules]})

    def kept(self) -> dict:
        return {"sysctls": self.sysctls, "chains": self.chains}

    def add(self, description: str, apply: Callable[[], None]) -> None:
        self.steps.append(Step(description, apply))

    def add_iptables(self, host, version: int, table: str, args: list) -> None:
        for arguments in args:
            argv = [IPTABLES[version], "-w", "-t", table, *arguments]
            self.add(shlex.join(argv), _command(host, argv))

    def section(self, title: str, before: list, after: list) -> None:
        if before or after:
            self.before.extend([f"# {title}"] + before)
            self.after.extend([f"# {title}"] + after)


def _command(host, argv: list) -> Callable[[], None]:
    def run() -> None:
        rc, out, err = host.run_command(argv)
        if rc != 0:
            raise CNIError(f"{shlex.join(argv)} failed with exit status {rc}: {(err or out).strip()}")
    return run


@dataclass(frozen=True)
class Family:
    """One IP family of a network's record: its cidr and subnet, and the record's key that holds
    the forwarding sysctl's value before the first run."""

    version: int
    cidr: str
    subnet: str
    before_key: str


def families(record: dict) -> list:
    """The record's families: its cidr's, and a dual-stack network's IPv6 part."""
    parts = [Family(ipaddress.ip_network(record["cidr"]).version, record["cidr"], record["subnet"],
                    "ip_forward_before")]
    if "cidr_v6" in record:
        parts.append(Family(6, record["cidr_v6"], record["subnet_v6"], "ip6_forward_before"))
    return parts


def _family_of_version(record: dict, version: int) -> Family | None:
    return next((family for family in families(record) if family.version == version), None)


def wanted_record(params: dict, record: dict | None) -> dict:
    """The record ``state=present`` keeps, but for the forwarding values before the first run
    (the plan's); bad input is an error naming the option and its value."""
    cidr, subnet = _checked_pair(params, "cidr", "subnet")
    recorded = ipaddress.ip_network(record["cidr"]).version if record else cidr.version
    if recorded != cidr.version:
        raise ConfigError("cidr", f"is IPv{cidr.version}, but this host's record of network {record['network']} holds "
                                  f"the IPv{recorded} cidr {record['cidr']}: remove the network with state=absent first "
                                  f"(that removes the IPv{recorded} chains and restores its forwarding)", params["cidr"])
    wanted = {"network": params["network"], "cidr": str(cidr), "subnet": str(subnet), "masquerade": params["masquerade"]}
    if params.get("cidr_v6") or params.get("subnet_v6"):
        if cidr.version != 4:
            raise ConfigError("cidr", "is IPv6, but with cidr_v6 (dual stack) cidr is the IPv4 network", params["cidr"])
        cidr_v6, subnet_v6 = _checked_pair(params, "cidr_v6", "subnet_v6")
        if cidr_v6.version != 6:
            raise ConfigError("cidr_v6", "must be an IPv6 network", params["cidr_v6"])
        wanted.update(cidr_v6=str(cidr_v6), subnet_v6=str(subnet_v6))
    elif record and "cidr_v6" in record:
        raise ConfigError("cidr_v6", f"is not given, but this host's record of network {record['network']} holds the "
                                     f"IPv6 cidr {record['cidr_v6']}: remove the network with state=absent first (that "
                                     "removes its IPv6 chains and restores IPv6 forwarding)", params.get("cidr_v6"))
    if params.get("address_v6"):
        _checked_address_v6(params["address_v6"])
    return wanted


def _checked_pair(params: dict, cidr_key: str, subnet_key: str) -> tuple:
    for key in (cidr_key, subnet_key):
        if not params.get(key):
            other = subnet_key if key == cidr_key else cidr_key
            raise ConfigError(key, f"is required with {other}", params.get(key))
    cidr = check_cidr(params[cidr_key], cidr_key)
    subnet = check_cidr(params[subnet_key], subnet_key)
    if subnet.version != cidr.version:
        raise ConfigError(subnet_key, f"is IPv{subnet.version} but {cidr_key} {cidr} is IPv{cidr.version}",
                          params[subnet_key])
    if not subnet.subnet_of(cidr):
        raise ConfigError(subnet_key, f"is not inside {cidr_key} {cidr}", params[subnet_key])
    return cidr, subnet


def _checked_address_v6(value: str) -> str:
    try:
        address = ipaddress.ip_address(value.strip())
    except ValueError:
        raise ConfigError("address_v6", "is not an IP address", value) from None
    if address.version != 6:
        raise ConfigError("address_v6", "is not an IPv6 address", value)
    return address.exploded


# -- router advertisements ------------------------------------------------------------------------

def interfaces_taking_ras(address_v6: str | None) -> list:
    """The interfaces whose accept_ra is 1, so that IPv6 forwarding on would stop them from taking
    router advertisements: the uplink (the interface holding ``address_v6``) and those whose
    default route an advertisement gave (flag RTF_ADDRCONF in /proc/net/ipv6_route). Sorted."""
    names = set()
    if address_v6:
        wanted = _checked_address_v6(address_v6).replace(":", "")
        names.update(fields[5] for fields in _proc_net_lines("if_inet6") if len(fields) >= 6 and fields[0] == wanted)
    for fields in _proc_net_lines("ipv6_route"):
        if len(fields) >= 10 and int(fields[1], 16) == 0 and int(fields[8], 16) & RTF_ADDRCONF:
            names.add(fields[9])
    return sorted(name for name in names if name != "lo" and _accept_ra(name) == ACCEPT_RA_WITHOUT_FORWARDING)


def _proc_net_lines(name: str) -> list:
    try:
        with open(os.path.join(PROC_NET, name), encoding="ascii") as handle:
            return [line.split() for line in handle]
    except FileNotFoundError:  # no IPv6 in the kernel
        return []


def _accept_ra(interface: str) -> int | None:
    try:
        return read_sysctl(ACCEPT_RA_SYSCTL.format(interface))
    except FileNotFoundError:  # the interface is gone
        return None


def plan_present(host, cache_dir: str, record: dict | None, wanted: dict, address_v6: str | None = None) -> Plan:
    """Record first (so the forwarding values before the first run are kept before they
    change), then forwarding on (and accept_ra 2 where IPv6 forwarding would cost an interface
    its advertised default route), then the chains of each family."""
    wanted = dict(wanted)
    for family in families(wanted):
        sysctl = FORWARDING_SYSCTL[family.version]
        wanted[family.before_key] = record[family.before_key] if record and family.before_key in record \
            else read_sysctl(sysctl)
    v6 = _family_of_version(wanted, 6)
    if v6 and wanted[v6.before_key] != FORWARDING_ON:
        # Forwarding is this network's doing: keep the advertised default routes it would stop.
        kept = dict((record or {}).get(ACCEPT_RA_BEFORE, {}))
        kept.update((name, ACCEPT_RA_WITHOUT_FORWARDING) for name in interfaces_taking_ras(address_v6))
        if kept:
            wanted[ACCEPT_RA_BEFORE] = dict(sorted(kept.items()))
    path = record_path(cache_dir, wanted["network"])
    plan = Plan()
    plan.section(path, _record_lines(record), _record_lines(wanted))
    if wanted != record:
        plan.add(f"write {path}", lambda: write_record(cache_dir, wanted))
    for family in families(wanted):
        sysctl = FORWARDING_SYSCTL[family.version]
        forwarding = read_sysctl(sysctl)
        plan.section("sysctl", [f"{sysctl} = {forwarding}"], [f"{sysctl} = {FORWARDING_ON}"])
        if forwarding != FORWARDING_ON:
            plan.add(f"{sysctl} = {FORWARDING_ON} (was {forwarding})", _sysctl_writer(sysctl, FORWARDING_ON))
    for interface in wanted.get(ACCEPT_RA_BEFORE, {}):
        _plan_accept_ra(plan, interface, ACCEPT_RA_ALWAYS, "its router-advertised default route kept with "
                                                           "forwarding on")
    # A replay writes accept_ra before forwarding, so that no advertised default route is dropped meanwhile.
    for interface in wanted.get(ACCEPT_RA_BEFORE, {}):
        plan.keep_sysctl(ACCEPT_RA_SYSCTL.format(interface), ACCEPT_RA_ALWAYS)
    for family in families(wanted):
        plan.keep_sysctl(FORWARDING_SYSCTL[family.version], FORWARDING_ON)
    for family in families(wanted):
        chains = [forward_chain(wanted["network"], family.cidr), masquerade_chain(wanted["network"], family.cidr)]
        for chain in chains:
            saved = read_table(host, family.version, chain.table)
            keep = chain.table == "filter" or wanted["masquerade"]
            plan.add_iptables(host, family.version, chain.table,
                              plan_chain(saved, chain) if keep else plan_removal(saved, chain))
            plan.section(f"{IPTABLES[family.version]} -t {chain.table}", owned_lines(saved, chain),
                         wanted_lines(chain) if keep else [])
            if keep:
                plan.keep_chain(family.version, chain)
    return plan


def _plan_accept_ra(plan: Plan, interface: str, value: int, why: str) -> None:
    """accept_ra of ``interface`` to ``value``, unless it is so or the interface is gone."""
    sysctl = ACCEPT_RA_SYSCTL.format(interface)
    current = _accept_ra(interface)
    if current is None:
        return
    plan.section("sysctl", [f"{sysctl} = {current}"], [f"{sysctl} = {value}"])
    if current != value:
        plan.add(f"{sysctl} = {value} (was {current}: {why})", _sysctl_writer(sysctl, value))


def _sysctl_writer(sysctl: str, value: int) -> Callable[[], None]:
    return lambda: write_sysctl(sysctl, value)


def plan_absent(host, cache_dir: str, network: str, record: dict | None) -> Plan:
    """Chains first (nat, then filter), then forwarding (:func:`plan_forwarding_back`), then
    the record, which is what a re-run after a failure needs to finish. Without a record both
    families' tables are searched for the network's chains; one whose tables cannot be read (no
    IPv6 in the kernel) cannot hold them."""
    plan = Plan()
    versions = [family.version for family in families(record)] if record else [4, 6]
    for version in versions:
        for chain in (masquerade_chain(network), forward_chain(network)):
            try:
                saved = read_table(host, version, chain.table)
            except CNIError:
                if record:
                    raise
                continue
            plan.add_iptables(host, version, chain.table, plan_removal(saved, chain))
            plan.section(f"{IPTABLES[version]} -t {chain.table}", owned_lines(saved, chain), [])
    if record:
        for family in families(record):
            plan_forwarding_back(plan, cache_dir, record, family)
        path = record_path(cache_dir, network)
        plan.section(path, _record_lines(record), _record_lines(None))
        plan.add(f"remove {path}", lambda: delete_record(cache_dir, network))
    return plan


def plan_forwarding_back(plan: Plan, cache_dir: str, record: dict, family: Family) -> None:
    """Forwarding of ``family`` back to the record's value before the first run, unless another
    network of the same IP version still has a record here: that network still routes, so
    forwarding stays as it is. This record's value is then handed on to the first of them (by
    name), if its first run turned forwarding on (a record joined while forwarding was on holds
    1) and none of them already holds a value other than 1: the last network to leave restores
    the value from before the first joined. The same goes for IPv6's accept_ra values. Handing
    on comes before the record's removal, so a re-run after a failure in between finds the
    value in both."""
    sysctl = FORWARDING_SYSCTL[family.version]
    forwarding = read_sysctl(sysctl)
    staying = _records_of_version(cache_dir, family.version, besides=record["network"])
    before = record[family.before_key]
    restored = forwarding if staying else before
    plan.section("sysctl", [f"{sysctl} = {forwarding}"], [f"{sysctl} = {restored}"])
    if forwarding != restored:
        plan.add(f"{sysctl} = {restored} (was {forwarding}, restored as before the first run)",
                 _sysctl_writer(sysctl, restored))
    accept_ra = record.get(ACCEPT_RA_BEFORE, {}) if family.version == 6 else {}
    if not staying:
        for interface, value in accept_ra.items():
            _plan_accept_ra(plan, interface, value, "restored as before the first run")
        return
    heir_record = staying[0]
    heir_family = _family_of_version(heir_record, family.version)
    heir = dict(heir_record)
    if before != FORWARDING_ON and all(other[_family_of_version(other, family.version).before_key] == FORWARDING_ON
                                       for other in staying):
        heir[heir_family.before_key] = before
    if accept_ra:
        heir[ACCEPT_RA_BEFORE] = dict(sorted({**accept_ra, **heir_record.get(ACCEPT_RA_BEFORE, {})}.items()))
    if heir == heir_record:
        return
    path = record_path(cache_dir, heir["network"])
    plan.section(path, _record_lines(heir_record), _record_lines(heir))
    plan.add(f"write {path} ({heir_family.before_key} {heir[heir_family.before_key]}, handed on from network "
             f"{record['network']}: {heir['network']} still needs forwarding)", lambda: write_record(cache_dir, heir))


def _records_of_version(cache_dir: str, version: int, besides: str) -> list:
    """The records of the networks with a family of IP ``version`` but ``besides``, by name. A
    record that cannot be read is an error: it may be of such a network."""
    records, problems = read_records(cache_dir)
    problem = next(iter(problems.values()), None)
    if problem:
        raise RecordError(problem.path, f"{problem.reason}; network {besides} leaves, and whether to restore "
                                        "forwarding depends on the other networks' records: fix or remove the file")
    return [other for network, other in records.items()
            if network != besides and _family_of_version(other, version)]


def _record_lines(record: dict | None) -> list:
    return record_text(record).splitlines() if record else []
