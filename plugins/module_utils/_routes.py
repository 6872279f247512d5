# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_route's service (its task is ``_route_task``): the kernel routes of a set of prefixes (``within``) reconciled with a
desired list. A route is the module's own when its protocol number (rtm_protocol) is the
ownership mark; only its own routes are ever added, replaced or deleted, and only inside
``within``. Routes of others inside ``within`` are reported as conflicts, never touched.

The steps: options parsed and checked (``parse_options``), the table read
(``read_routes``), every gateway's adjacency asked of the kernel (``resolve_gateways``), the
plan made (``make_plan``, pure: desired and current routes in, changes out) and applied in one
batch, undone if the kernel refuses any of it (``apply``). The kernel is reached through
``_rtnetlink``."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field, replace

from ._adjacency import reason_not_adjacent
from ._defaults import DEFAULT_ROUTE_TABLE
from ._errors import CNIError, ConfigError, OperationError
from ._identifiers import check_cidr, check_ifname, check_ip

# Every route type (rtm_type) the kernel knows, up to its RTN_MAX, by number; a route of another
# number (of a newer kernel) is named by its number.
KERNEL_TYPES = {0: "unspec", 1: "unicast", 2: "local", 3: "broadcast", 4: "anycast", 5: "multicast",
                6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw", 10: "nat", 11: "xresolve"}
TYPE_NUMBERS = {name: number for number, name in KERNEL_TYPES.items()}
# The types a desired route can have.
ROUTE_TYPES = ("unicast", "blackhole", "unreachable", "prohibit")
RTPROT_KERNEL = 2  # connected routes of an interface's address: never reported
# Protocol numbers 0 to 4 are the kernel's own (unspec, redirect, kernel, boot, static: what
# `ip route add` writes by default), so none of them can mark a route as this module's.
LOWEST_OWN_PROTOCOL = 5
PROTOCOL_NAMES = {2: "kernel", 3: "boot", 4: "static", 9: "ra", 11: "zebra", 12: "bird", 16: "dhcp",
                  18: "keepalived", 42: "babel", 186: "bgp", 187: "isis", 188: "ospf", 189: "rip"}
# The metric the kernel gives a route that names none.
DEFAULT_METRIC = {4: 0, 6: 1024}
MAX_U32 = 2**32 - 1
RT_TABLE_LOCAL = 255


class RouteError(CNIError):
    """A route the kernel would refuse or that is not this module's to change; ``routes`` are
    the routes concerned, as the module returns them."""

    def __init__(self, message: str, routes: list):
        self.routes = list(routes)
        super().__init__(message)

    def to_dict(self) -> dict:
        return {"msg": str(self), "routes": self.routes}


def protocol_label(protocol: int) -> str:
    name = PROTOCOL_NAMES.get(protocol)
    return f"{protocol} ({name})" if name else str(protocol)


@dataclass(frozen=True)
class Route:
    """A route of one table. ``name`` (what the route is for) is the operator's, never the
    kernel's; ``protocol`` is known for routes read from the kernel; ``oif`` is the index of
    ``dev``, known once the kernel has been asked (0 otherwise). None is part of what a route is
    when two are compared."""

    dst: object  # ipaddress.IPv4Network or IPv6Network
    type: str = "unicast"
    via: object = None  # ipaddress address, or None
    dev: str | None = None
    metric: int = 0
    table: int = DEFAULT_ROUTE_TABLE
    # The gateway is taken as on the link of dev, unasked (a VXLAN peer's VTEP address).
    onlink: bool = False
    name: str | None = field(default=None, compare=False)
    protocol: int | None = field(default=None, compare=False)
    oif: int = field(default=0, compare=False)

    @property
    def key(self) -> tuple:
        """What the kernel tells routes of a table apart by: destination and metric."""
        return self.dst.version, self.dst, self.metric

    @property
    def sort_key(self) -> tuple:
        return self.dst.version, self.dst.network_address, self.dst.prefixlen, self.metric

    def matches(self, current: "Route") -> bool:
        """Whether the kernel's ``current`` route is this desired one: the same type and
        gateway, and the same interface where this one names one."""
        if (self.type, self.via, self.onlink) != (current.type, current.via, current.onlink):
            return False
        return self.dev is None or self.type != "unicast" or self.dev == current.dev

    def label(self) -> str:
        return f"{self.name} ({self.dst})" if self.name else str(self.dst)

    def as_dict(self, with_name: bool = False) -> dict:
        result = {"dst": str(self.dst), "via": str(self.via) if self.via is not None else None, "dev": self.dev,
                  "type": self.type, "metric": self.metric, "table": self.table}
        if self.onlink:
            result["onlink"] = True
        if with_name and self.name is not None:
            result["name"] = self.name
        return result

    def line(self, protocol: int) -> str:
        """The route as ``ip route`` shows it."""
        words = [] if self.type == "unicast" else [self.type]
        words.append(str(self.dst))
        if self.via is not None:
            words += ["via", str(self.via)]
        if self.dev is not None:
            words += ["dev", self.dev]
        if self.onlink:
            words.append("onlink")
        words += ["proto", str(protocol), "metric", str(self.metric)]
        if self.table != DEFAULT_ROUTE_TABLE:
            words += ["table", str(self.table)]
        return " ".join(words)


@dataclass(frozen=True)
class Options:
    routes: list
    within: list
    protocol: int
    table: int
    state: str


@dataclass
class Plan:
    """What a run changes: routes to add, (old, new) pairs to replace, own routes to remove;
    and what it leaves: own routes as desired, others' routes inside ``within``."""

    add: list = field(default_factory=list)
    replace: list = field(default_factory=list)
    remove: list = field(default_factory=list)
    unchanged: list = field(default_factory=list)
    conflicts: list = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.add or self.replace or self.remove)

    def after(self) -> list:
        """The module's own routes inside ``within`` once the plan is applied."""
        return sorted(self.unchanged + self.add + [new for _old, new in self.replace], key=lambda r: r.sort_key)


# -- options ---------------------------------------------------------------------------------------

def _parse_route(item: dict, path: str, table: int) -> Route:
    dst = check_cidr(item.get("dst"), f"{path}.dst")
    route_type = item.get("type") or "unicast"  # its choices are the argument spec's
    via = item.get("via")
    dev = item.get("dev")
    if via is not None:
        via = check_ip(via, f"{path}.via")
        if via.version != dst.version:
            raise ConfigError(f"{path}.via", f"is an IPv{via.version} address for the IPv{dst.version} "
                              f"destination {dst}", str(via))
    if dev is not None:
        check_ifname(dev, f"{path}.dev")
    if route_type == "unicast" and via is None and dev is None:
        raise ConfigError(path, "a unicast route needs via (a gateway) or dev (an interface)", str(dst))
    if route_type != "unicast" and (via is not None or dev is not None):
        raise ConfigError(f"{path}.{'via' if via is not None else 'dev'}",
                          f"a {route_type} route goes nowhere, so it takes no via or dev",
                          str(via) if via is not None else dev)
    onlink = bool(item.get("onlink"))
    if onlink and (via is None or dev is None):
        raise ConfigError(f"{path}.onlink", "an onlink route needs both via (the gateway it takes as on the link) "
                          "and dev (the link)", str(dst))
    metric = item.get("metric")
    if metric is None:
        metric = DEFAULT_METRIC[dst.version]
    elif not 0 <= metric <= MAX_U32:
        raise ConfigError(f"{path}.metric", f"must be between 0 and {MAX_U32}", metric)
    return Route(dst=dst, type=route_type, via=via, dev=dev, metric=metric, table=table, onlink=onlink,
                 name=item.get("name"))


def parse_options(params: dict) -> Options:
    """The options, checked; errors name the option (``routes[2].via``) and the value."""
    table, protocol = params["table"], params["protocol"]
    if not 1 <= table <= MAX_U32 or table == RT_TABLE_LOCAL:
        raise ConfigError("table", f"must be between 1 and {MAX_U32}, and not {RT_TABLE_LOCAL} (the kernel's "
                          "local table)", table)
    if not LOWEST_OWN_PROTOCOL <= protocol <= 255:
        raise ConfigError("protocol", f"must be between {LOWEST_OWN_PROTOCOL} and 255: 0 to 4 are the kernel's "
                          "own (4 is static, what ip route add writes), so they cannot mark routes as this "
                          "module's", protocol)
    within = [check_cidr(text, f"within[{index}]") for index, text in enumerate(params["within"] or [])]
    routes = []
    if params["state"] == "present":
        routes = [_parse_route(item, f"routes[{index}]", table) for index, item in enumerate(params["routes"] or [])]
    if not within:
        if not routes:
            raise ConfigError("within", "is required with state=absent or an empty routes list: it names the "
                              "prefixes whose routes of this module are removed", params["within"])
        within = [route.dst for route in routes]  # the routes' own prefixes, and nothing more
    _check_closed(routes, within)
    return Options(routes=routes, within=within, protocol=protocol, table=table, state=params["state"])


def _check_closed(routes: list, within: list) -> None:
    """Every route lies inside ``within``, and no two are the same kernel route."""
    seen = {}
    for index, route in enumerate(routes):
        if not inside(route.dst, within):
            raise ConfigError(f"routes[{index}].dst", "is not inside any prefix of within "
                              f"({', '.join(map(str, within))})", str(route.dst))
        if route.key in seen:
            raise ConfigError(f"routes[{index}]", f"has the dst and metric of routes[{seen[route.key]}] "
                              f"({route.dst} metric {route.metric}): a table holds one such route",
                              str(route.dst))
        seen[route.key] = index


def inside(network, within: list) -> bool:
    """Whether ``network`` lies inside a prefix of ``within`` (compared as integers: subnet_of
    costs a thousand routes a tenth of a second)."""
    address = int(network.network_address)
    candidates = (prefix for prefix in within if network.version == prefix.version and network.prefixlen >= prefix.prefixlen)
    return any(address & int(prefix.netmask) == int(prefix.network_address) for prefix in candidates)


# -- the plan --------------------------------------------------------------------------------------

def make_plan(desired: list, within: list, current: list, protocol: int) -> Plan:
    """Desired routes and the table's current routes (with their protocol) in, the changes
    out. A desired route that another protocol's route already holds (same dst and metric)
    raises RouteError: the module never takes over what it does not own."""
    plan = Plan()
    inside_within = [route for route in current if inside(route.dst, within)]
    owned = {route.key: route for route in inside_within if route.protocol == protocol}
    others = [route for route in inside_within if route.protocol != protocol]
    others_by_key = {route.key: route for route in others}
    collisions = [(route, others_by_key[route.key]) for route in desired if route.key in others_by_key]
    if collisions:
        raise RouteError(
            "; ".join(f"route {wanted.label()} metric {wanted.metric} is already in table {held.table} as a route "
                      f"of protocol {protocol_label(held.protocol)}, not this module's ({protocol}): remove that "
                      "route or give this one another metric" for wanted, held in collisions),
            [dict(held.as_dict(), protocol=held.protocol, name=wanted.name) for wanted, held in collisions])
    for route in desired:
        old = owned.get(route.key)
        if old is None:
            plan.add.append(route)
        elif route.matches(old):
            plan.unchanged.append(replace(old, name=route.name))
        else:
            plan.replace.append((old, route))
    wanted = {route.key for route in desired}
    plan.remove = sorted((route for key, route in owned.items() if key not in wanted), key=lambda r: r.sort_key)
    plan.conflicts = sorted((route for route in others if route.protocol != RTPROT_KERNEL),
                            key=lambda r: r.sort_key)
    return plan


# -- the kernel ------------------------------------------------------------------------------------

class InterfaceNames:
    """Interface index to name, asked once per index."""

    def __init__(self):
        self._names = {}

    def __call__(self, index: int) -> str | None:
        if index not in self._names:
            try:
                self._names[index] = socket.if_indextoname(index)
            except OSError:
                self._names[index] = None
        return self._names[index]


def read_routes(netlink, table: int, versions: set) -> list:
    """The routes of ``table`` of the IP versions given, as Routes with their protocol."""
    names = InterfaceNames()
    routes = []
    for version in sorted(versions):
        for found in netlink.dump(socket.AF_INET if version == 4 else socket.AF_INET6, table):
            if found.cloned:
                continue
            route_type = KERNEL_TYPES.get(found.type, str(found.type))
            # IPv6 gives unreachable and blackhole routes the loopback device: not part of the route.
            dev = names(found.oif) if found.oif and route_type == "unicast" else None
            routes.append(Route(dst=found.dst, type=route_type, via=found.gateway, dev=dev, metric=found.metric,
                                table=table, onlink=found.onlink, protocol=found.protocol, oif=found.oif if dev else 0))
    return routes


def resolve_gateways(netlink, routes: list, planned_devs: bool = False) -> list:
    """The routes with the interface the kernel would use for each gateway: each ``via`` must
    be directly reachable (``ip route get <via>`` answers a route without a gateway), else
    RouteError naming every route whose gateway is not. A ``dev`` that does not exist is bad
    input (ConfigError naming it), except, with ``planned_devs`` (check mode), the dev of an onlink
    route: an earlier task would have made it (a VXLAN device). Each route comes back with its
    interface's index (0 for such a planned dev)."""
    routes = [route if route.dev is None or (route.onlink and planned_devs and not _exists(route.dev))
              else replace(route, oif=_interface_index(route.dev, f"routes[{index}].dev"))
              for index, route in enumerate(routes)]
    # An onlink route's gateway is on its dev by the operator's word: the kernel is not asked.
    gateways = [route for route in routes if route.via is not None and not route.onlink]
    answers = iter(netlink.get([route.via for route in gateways], [route.oif for route in gateways]))
    names = InterfaceNames()
    resolved, unreachable = [], []
    for route in routes:
        if route.via is None or route.onlink:
            resolved.append(route)
            continue
        answer = next(answers)
        problem = reason_not_adjacent(answer, names)
        if problem:
            unreachable.append((route, problem))
        elif route.dev is None:
            resolved.append(replace(route, dev=names(answer.oif), oif=answer.oif))
        else:
            resolved.append(route)
    if unreachable:
        raise RouteError(
            "; ".join(f"route {route.label()} via {route.via}: the gateway is not directly reachable ({problem})"
                      for route, problem in unreachable),
            [dict(route.as_dict(with_name=True), reason=problem) for route, problem in unreachable])
    return resolved


def _exists(name: str) -> bool:
    try:
        socket.if_nametoindex(name)
    except OSError:
        return False
    return True


def _interface_index(name: str, path: str) -> int:
    try:
        return socket.if_nametoindex(name)
    except OSError:
        raise ConfigError(path, "no interface of this name exists on this host", name) from None


def _request(verb: str, route: Route, protocol: int):
    """The kernel request for ``verb`` of ``route``. A delete names the route by its key alone
    (destination, metric, type and the ownership mark), as the kernel finds it."""
    from ._rtnetlink import RouteRequest  # pylint: disable=import-outside-toplevel

    route_type = TYPE_NUMBERS[route.type] if route.type in TYPE_NUMBERS else int(route.type)  # see KERNEL_TYPES
    nexthop = verb != "delete" and route.type == "unicast"
    return RouteRequest(dst=route.dst, type=route_type, protocol=protocol, table=route.table, metric=route.metric,
                        gateway=route.via if nexthop else None,
                        oif=route.oif if nexthop else 0, onlink=nexthop and route.onlink)


def apply(netlink, plan: Plan, protocol: int) -> None:
    """Carry out the plan in one batch. When the kernel refuses any of it, what it accepted is
    undone and the refusal raised (OperationError), so a run changes all of it or nothing."""
    steps = [*(("add", route, ("delete", route)) for route in plan.add),
             *(("replace", new, ("replace", old)) for old, new in plan.replace),
             *(("delete", route, ("add", route)) for route in plan.remove)]
    answers = netlink.change([(verb, _request(verb, route, protocol)) for verb, route, _undo in steps])
    refused = [(verb, route, error) for (verb, route, _undo), error in zip(steps, answers) if error is not None]
    if not refused:
        return
    accepted = [undo for (_verb, _route, undo), error in zip(steps, answers) if error is None]
    cleanup_errors = _undo(netlink, accepted[::-1], protocol)
    cause = RouteError("; ".join(f"{verb} route {route.label()}: {error.strerror}" for verb, route, error in refused),
                       [dict(route.as_dict(with_name=True), action=verb) for verb, route, _error in refused])
    raise OperationError("the kernel refused routes, and the routes this run had changed were put back",
                         cause, cleanup_errors)


def _undo(netlink, undo: list, protocol: int) -> list:
    """Carry out the ``(verb, route)`` steps that undo a batch; the RouteError of each that fails
    (an interface gone since the table was read is the kernel's ENODEV, like any other refusal)."""
    answers = netlink.change([(verb, _request(verb, route, protocol)) for verb, route in undo])
    return [RouteError(f"undo {verb} of route {route.label()}: {error.strerror}", [route.as_dict(with_name=True)])
            for (verb, route), error in zip(undo, answers) if error is not None]
