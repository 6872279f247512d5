# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Validation of a network configuration list, in three layers, each a module of the
``_validation`` package:

1. the envelope, by the spec and libcni (name, versions, plugin objects, reserved keys,
   capabilities): ``envelope``;
2. each plugin object and IPAM section against the rules of its type, kept one file per plugin
   in ``_plugin_rules`` (its schema, its checks in Python, the releases that brought its keys),
   then the rules between plugins (chaining, two plugins creating one interface): ``sections``,
   with ``schema`` for the JSON Schema part;
3. the network against the other networks of the host (same name, overlapping subnets, one
   host device with different subnets): ``host``.

Every finding names a JSON path (``plugins[0].ipam.ranges[0][0].subnet``), says what is wrong
and carries the offending value (``report``). Validation is pure: plugin binaries are consulted
only through the ``installed_versions`` callable the caller passes in (``installed``). A rule
that only some plugin releases enforce is an error when the installed binary is known to be one
of them, else a warning. Nothing here knows a plugin type: what a plugin does is its rules
file's, reached through ``_plugin_rules/registry.py``."""

from __future__ import annotations

from ._conflist import as_libcni_passes
from ._host_reads import HostReads
from ._validation.coerce import coerce_scalars
from ._validation.envelope import check_envelope
from ._validation.host import check_host
from ._validation.installed import check_installed, list_version
from ._validation.parse import parse_conflist_text
from ._validation.report import ValidationReport
from ._validation.sections import check_dns, check_plugins

__all__ = ("ValidationReport", "coerce_scalars", "parse_conflist_text", "validate_network_list", "validate_text")


def validate_network_list(conf, *, installed_versions=None, installed_release=None, other_networks=(),
                          source: str | None = None, report: ValidationReport | None = None,
                          dropin_files: list | None = None, host_reads: HostReads | None = None) -> ValidationReport:
    """Validate one network configuration list (a dict as parsed from JSON).

    ``installed_versions``: ``plugin_type -> supported versions``, raising PluginNotFoundError,
    or None to skip the checks against installed binaries; given, the checks also consult the
    host's /proc (they run where the plugins will). ``installed_release``: ``plugin_type ->
    release`` recorded for the binary (e.g. "1.6.2"), or None when unknown; without it a
    binary's release is inferred from the CNI versions it supports. ``other_networks``: the
    host's other networks (objects with ``name``, ``source``, ``plugins``, as
    ``_conflist.load_conf_dir`` returns them); ``source`` is the file this list is (or will
    be) read from. ``report`` lets a caller add to findings it already has (e.g. from
    ``parse_conflist_text``). ``dropin_files``: the ``<conf_dir>/<name>/*.conf`` files libcni
    would add to a list without ``plugins`` (None when not known). ``host_reads``: where the
    checks against the host (with ``installed_versions``) keep what they read; a new one if None."""
    report = report if report is not None else ValidationReport()
    if not isinstance(conf, dict):
        report.error("", "the network configuration must be a JSON object", conf)
        return report
    if isinstance(conf.get("plugins"), list):
        conf = dict(conf, plugins=as_libcni_passes(conf["plugins"]))  # what each plugin receives
    check_envelope(conf, source, dropin_files, report)
    releases = {}
    if installed_versions is not None:
        version, releases = check_installed(conf, installed_versions, installed_release, report)
    else:
        version = list_version(conf)
    on_host = (host_reads or HostReads()) if installed_versions is not None else None
    subnets = check_plugins(conf, version, releases, on_host, report)
    check_dns(conf, report)
    if other_networks:
        check_host(conf, subnets, source, other_networks, report)
    return report


def validate_text(text: str | bytes, **kwargs) -> tuple:
    """Parse and validate conflist text: ``(data or None, report)``."""
    data, report = parse_conflist_text(text)
    if data is None:
        return None, report
    return data, validate_network_list(data, report=report, **kwargs)
