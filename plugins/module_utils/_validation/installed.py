# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""The list against the installed plugin binaries: each type found, the CNI version the list
would run at supported by all of them, and the releases each binary may be."""

from __future__ import annotations

from .._conflist import plugin_binaries
from .._errors import CNIError
from .._plugin_rules._common import binary_releases, version_or_none
from .._result import select_version, version_key
from .report import ValidationReport


def check_installed(conf: dict, installed_versions, installed_release, report: ValidationReport) -> tuple:
    """Resolve every plugin and IPAM type; return the version the list would run at and the
    releases each installed binary may be."""
    supported = []
    owners = []
    releases = {}
    for index, _plugin, plugin_type, ipam_type in plugin_binaries(conf.get("plugins")):
        for path, name in ((f"plugins[{index}].type", plugin_type), (f"plugins[{index}].ipam.type", ipam_type)):
            if not name:
                continue
            try:
                versions = list(installed_versions(name))
                release = installed_release(name) if installed_release else None
            except (CNIError, OSError, ValueError) as exc:
                report.error(path, str(exc), name, of_host=True)
                continue
            supported.append(versions)
            owners.append((path, name, versions))
            releases[name] = binary_releases(release, versions)
    version = list_version(conf, supported)
    if version and version_or_none(version) is not None:
        for path, name, versions in owners:
            if (version or "0.1.0") not in versions:
                report.error("cniVersion", f"the installed {name} plugin ({path}) does not support it; it supports "
                             f"{', '.join(versions)}{_version_way_out(version, supported)}", version, of_host=True)
    return version, releases


def _version_way_out(version: str, supported: list) -> str:
    """The two ways out of a cniVersion the installed plugins do not all support."""
    common = set.intersection(*(set(v) for v in supported)) if supported else set()
    lower = sorted((v for v in common if version_key(v) < version_key(version)), key=version_key)
    older = f"set cni_version: {lower[-1]} (the highest every installed plugin supports), " if lower else ""
    return f"; {older}or install plugins that support {version}"


def list_version(conf: dict, plugin_versions=None) -> str:
    version = conf.get("cniVersion", "")
    versions = conf.get("cniVersions")
    if not isinstance(version, str) or version_or_none(version or "0.1.0") is None:
        return ""
    if not isinstance(versions, list) or not all(isinstance(v, str) and version_or_none(v) for v in versions):
        versions = None
    return select_version(version, versions, plugin_versions)
