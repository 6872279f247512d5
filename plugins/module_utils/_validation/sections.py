# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Layer 2: each plugin object and IPAM section against the rules of its type, then the rules
between plugins (chain order, two plugins creating one interface)."""

from __future__ import annotations

from .._conflist import plugin_binaries
from .._plugin_rules.registry import IPAM, PLUGINS
from .._plugin_rules._common import Context, is_ip, json_path, list_of, map_of, version_or_none
from .report import ValidationReport
from .schema import check_rules


def check_plugins(conf: dict, version: str, releases: dict, on_host, report: ValidationReport) -> list:
    """Schema and checks of every plugin and IPAM section; returns the IPAM subnets for the
    cross-network checks. ``on_host``: the ``_host_reads.HostReads`` of checks run on the host,
    or None."""
    seen = []
    subnets = []
    previous_main = None
    interface_owner = None
    for position, (index, plugin, plugin_type, ipam_type) in enumerate(plugin_binaries(conf.get("plugins"))):
        ctx = Context(report, ["plugins", index], version, position, seen=list(seen), previous_main=previous_main,
                      releases=releases.get(plugin_type), on_host=on_host, subnets=subnets)
        rules = PLUGINS.get(plugin_type)
        go_view = check_rules(plugin, rules, "plugin", plugin_type, ctx) if rules else plugin
        if rules is None:
            report.warn(ctx.path("type"), "is not a reference plugin: only the envelope rules were checked", plugin_type)
        if ipam_type:
            ipam_ctx = Context(report, ctx.base, version, position, seen=ctx.seen, releases=releases.get(ipam_type),
                               on_host=on_host, subnets=subnets)
            go_view = dict(go_view, ipam=_check_ipam(go_view, plugin_type, ipam_type, ipam_ctx))
            ctx.ipam_gateway_sets = _gateway_sets(go_view["ipam"], ipam_type)
        if rules is not None:
            creates = rules.creates_interface_at(position, ipam_type)
            _check_chaining(plugin_type, rules, ctx, interface_owner if creates else None)
            if creates:
                interface_owner = interface_owner or (plugin_type, ctx.path())
            if not rules.chained:
                previous_main = plugin_type
            if rules.checks:
                rules.checks(go_view, ctx)
        else:
            previous_main = None
        seen.append((plugin_type, go_view))
    return subnets


def _check_chaining(plugin_type: str, rules, ctx: Context, interface_owner) -> None:
    """Rules of the plugin's place in the list; ``interface_owner``: (type, path) of an earlier
    plugin that created the container interface this one would create again, or None."""
    if ctx.position == 0 and rules.chained:
        ctx.error(["type"], f"{plugin_type} is a chained plugin: it needs a previous plugin's result and cannot come first",
                  plugin_type)
    if rules.min_spec and version_or_none(ctx.version or "0.1.0") and not ctx.version_at_least(rules.min_spec):
        ctx.report.error("cniVersion", f"plugin {plugin_type} ({ctx.path()}) needs cniVersion {rules.min_spec} or newer",
                         ctx.version)
    if interface_owner:
        owner_type, owner_path = interface_owner
        ctx.error(["type"], f"creates the container interface, which {owner_type} ({owner_path}) already created: "
                  "the ADD fails with 'already exists'", plugin_type)


def _check_ipam(plugin: dict, plugin_type: str, ipam_type: str, ctx: Context) -> dict:
    """The IPAM section; under a third-party plugin, which may rewrite the section before it
    delegates (Calico's usePodCidr), the findings are warnings."""
    ipam = plugin["ipam"]
    rules = IPAM.get(ipam_type)
    if rules is None:
        ctx.warn(["ipam", "type"], "is not a reference IPAM plugin: its keys were not checked", ipam_type)
        return ipam
    if plugin_type in PLUGINS:
        return _apply_ipam(plugin, ipam_type, rules, ctx)
    scratch = ValidationReport()
    scratch_ctx = Context(scratch, ctx.base, ctx.version, ctx.position, seen=ctx.seen, releases=ctx.releases,
                          on_host=ctx.on_host)
    go_view = _apply_ipam(plugin, ipam_type, rules, scratch_ctx)
    for finding in scratch.errors + scratch.warnings:
        ctx.report.warn(finding.path, f"{finding.message} (as {ipam_type} would read it; {plugin_type} may rewrite its "
                        "ipam section before delegating)", finding.value, of_host=finding.of_host)
    return go_view


def _gateway_sets(ipam: dict, ipam_type: str) -> list | None:
    rules = IPAM.get(ipam_type)
    if rules is None or rules.gateway_sets is None:
        return None
    return rules.gateway_sets(ipam)


def _apply_ipam(plugin: dict, ipam_type: str, rules, ctx: Context) -> dict:
    go_view = check_rules(plugin["ipam"], rules, "ipam", ipam_type, ctx)
    if rules.checks:
        rules.checks(dict(plugin, ipam=go_view), ctx)
    return go_view


def check_dns(conf: dict, report: ValidationReport) -> None:
    for index, plugin, _type, _ipam in plugin_binaries(conf.get("plugins")):
        for where in (["dns"], ["ipam", "dns"]):
            holder = map_of(plugin.get("ipam")) if len(where) == 2 else plugin
            for position, server in enumerate(list_of(map_of(holder.get("dns")).get("nameservers"))):
                if isinstance(server, str) and not is_ip(server):
                    report.warn(json_path(["plugins", index] + where + ["nameservers", position]),
                                "is not an IP address; the plugin passes it on, but resolv.conf needs addresses", server)
