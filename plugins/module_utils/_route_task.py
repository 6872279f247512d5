# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_route's task: its options (ARGUMENT_SPEC) and run, reconciling the kernel's routes with
``_routes``."""

from __future__ import annotations

from ._argspec import ArgumentSpec
from ._defaults import DEFAULT_ROUTE_PROTOCOL, DEFAULT_ROUTE_TABLE
from ._errors import OperationError
from ._routes import ROUTE_TYPES, apply, make_plan, parse_options, protocol_label, read_routes, resolve_gateways


ROUTE_OPTIONS = {
    "dst": {"type": "str", "required": True},
    "via": {"type": "str"},
    "dev": {"type": "str"},
    "type": {"type": "str", "choices": list(ROUTE_TYPES), "default": "unicast"},
    "metric": {"type": "int"},
    "onlink": {"type": "bool", "default": False},
    "name": {"type": "str"},
}


ARGUMENT_SPEC = ArgumentSpec({
    "routes": {"type": "list", "elements": "dict", "options": ROUTE_OPTIONS, "default": []},
    "within": {"type": "list", "elements": "str", "default": []},
    "protocol": {"type": "int", "default": DEFAULT_ROUTE_PROTOCOL},
    "table": {"type": "int", "default": DEFAULT_ROUTE_TABLE},
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
})


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    from ._rtnetlink import RouteSocket  # pylint: disable=import-outside-toplevel

    result.update({"changed": False, "routes": [], "added": [], "replaced": [], "removed": [], "conflicts": []})
    options = parse_options(params)
    with RouteSocket() as netlink:
        desired = resolve_gateways(netlink, options.routes, planned_devs=host.check_mode)
        current = read_routes(netlink, options.table, {prefix.version for prefix in options.within})
        plan = make_plan(desired, options.within, current, options.protocol)
        for route in plan.conflicts:
            host.warn(f"route {route.line(route.protocol)} lies inside {', '.join(map(str, options.within))} but is "
                      f"not cni_route's: its protocol is {protocol_label(route.protocol)}, cni_route's "
                      f"{options.protocol}; left as it is")
        result.update({
            "added": [route.as_dict(with_name=True) for route in plan.add],
            "replaced": [new.as_dict(with_name=True) for _old, new in plan.replace],
            "removed": [route.as_dict(with_name=True) for route in plan.remove],
            "conflicts": [dict(route.as_dict(), protocol=route.protocol) for route in plan.conflicts],
        })
        if plan.changed and not host.check_mode:
            try:
                apply(netlink, plan, options.protocol)
            except OperationError as error:
                result["changed"] = bool(error.cleanup_errors)
                result.update({"added": [], "replaced": [], "removed": []})
                raise
    before = sorted(plan.unchanged + [old for old, _new in plan.replace] + plan.remove, key=lambda r: r.sort_key)
    result["changed"] = plan.changed
    after = plan.after()
    result["routes"] = [route.as_dict() for route in after]
    if host.diff:
        header = f"routes of protocol {options.protocol} in table {options.table} within " + \
            ", ".join(map(str, options.within))
        result["diff"] = {
            "before": "".join(route.line(options.protocol) + "\n" for route in before),
            "after": "".join(route.line(options.protocol) + "\n" for route in after),
            "before_header": header, "after_header": header,
        }
