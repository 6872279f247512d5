# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Layer 1, the envelope, by the spec and libcni: name, versions, the plugin objects' shape,
reserved keys, capabilities."""

from __future__ import annotations

import difflib
import os

from .._conflist import (
    ENVELOPE_ORDER, FLAG_KEYS, NAME_MISSING, NOT_A_BOOLEAN, NOT_A_STRING, PLUGIN_NOT_AN_OBJECT, PLUGINS_MISSING_WHILE_INLINE_ONLY,
    PLUGINS_NOT_A_LIST, TYPE_MISSING, flag_value,
)
from .._errors import ConfigError
from .._identifiers import PLUGIN_FILE_NAME_RULE, check_network_name, is_plugin_file_name
from .._plugin_rules._common import json_path, version_or_none
from .._result import HIGHEST_VERSION, KNOWN_VERSIONS, version_key
from .._schemas import KNOWN_CAPABILITIES, RESERVED_KEYS, RESERVED_PREFIX
from .report import ValidationReport


def _check_version_string(value, path: str, report: ValidationReport) -> bool:
    if not isinstance(value, str):
        report.error(path, NOT_A_STRING, value)
        return False
    try:
        key = version_key(value)
    except ConfigError:
        report.error(path, "is not a version of the form MAJOR.MINOR.PATCH", value)
        return False
    if value in KNOWN_VERSIONS:
        return True
    if key > version_key(HIGHEST_VERSION):
        report.error(path, f"is newer than any CNI version a runtime knows ({HIGHEST_VERSION})", value)
    else:
        report.error(path, "is not a CNI version; known: " + ", ".join(KNOWN_VERSIONS), value)
    return False


def check_envelope(conf: dict, source, dropin_files, report: ValidationReport) -> None:
    name = conf.get("name")
    if "name" not in conf:
        report.error("name", NAME_MISSING)
    else:
        try:
            check_network_name(name)
        except ConfigError as exc:
            report.error("name", exc.message, name)
    versions = conf.get("cniVersions")
    if conf.get("cniVersion", "") != "":
        _check_version_string(conf["cniVersion"], "cniVersion", report)
    elif not versions:  # with cniVersions, libcni runs the list at the highest of them
        # "" is what libcni's ConfListFromConf gives a .conf without one, and what plugins read as unset.
        report.warn("cniVersion", "is not set: plugins then read the configuration as version 0.1.0")
    if versions is not None:
        if not isinstance(versions, list) or not versions:
            report.error("cniVersions", "must be a non-empty list of version strings", versions)
        else:
            for index, item in enumerate(versions):
                if isinstance(item, str) and item not in KNOWN_VERSIONS and version_or_none(item) and \
                        version_key(item) > version_key(HIGHEST_VERSION):
                    report.warn(f"cniVersions[{index}]", f"is newer than {HIGHEST_VERSION}; runtimes skip it", item)
                else:
                    _check_version_string(item, f"cniVersions[{index}]", report)
    for key in FLAG_KEYS:
        value = conf.get(key)
        if key not in conf or isinstance(value, bool):
            continue
        if flag_value(value) is not None:
            report.warn(key, "is a string; libcni accepts it, but write a JSON boolean", value)
        else:
            report.error(key, NOT_A_BOOLEAN, value)
    for key in conf:
        if key not in ENVELOPE_ORDER:
            close = difflib.get_close_matches(key, ENVELOPE_ORDER, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'? (the envelope's keys are case-sensitive)" if close else ""
            report.warn(json_path([key]), f"unknown key in the network list{hint}")
    plugins = conf.get("plugins")
    if plugins is None:
        _check_dropins_only(conf, source, dropin_files, report)
        return
    if not isinstance(plugins, list) or not plugins:
        report.error("plugins", PLUGINS_NOT_A_LIST, plugins)
        return
    for index, plugin in enumerate(plugins):
        _check_plugin_envelope(plugin, index, conf, report)


def _check_dropins_only(conf: dict, source, dropin_files, report: ValidationReport) -> None:
    """A list without ``plugins``: libcni loads ``<conf_dir>/<name>/*.conf`` instead, and fails
    when there are none ("no plugin configs found")."""
    name = conf.get("name")
    directory = os.path.join(os.path.dirname(source), str(name)) if source else f"<conf_dir>/{name}"
    if conf.get("loadOnlyInlinedPlugins") is True:
        report.error("plugins", PLUGINS_MISSING_WHILE_INLINE_ONLY)
    elif dropin_files is not None and not dropin_files:
        report.error("plugins", f"is not set, and {directory} holds no *.conf plugin file: libcni cannot load this "
                     "network (no plugin configs found)", of_host=True)
    else:
        # Of the host when it holds drop-ins: without them, the same configuration is an error.
        report.warn("plugins", f"is not set: libcni then loads {directory}/*.conf only", of_host=dropin_files is not None)


def _warn_runtime_config(plugin: dict, index: int, report: ValidationReport) -> None:
    """A static ``runtimeConfig``: the spec reserves it, but the plugins read it (their own
    integration configurations write it) and libcni passes it on unless it injects its own
    (injectRuntimeConfig, the same in libcni 1.1 and 1.3, and in cnikit's engine)."""
    capabilities = plugin.get("capabilities")
    enabled = sorted(name for name, on in capabilities.items() if on is True) if isinstance(capabilities, dict) else []
    if enabled:
        fate = ("libcni (1.1 and 1.3) and cnikit replace it whole (not merged) with the capability arguments when the "
                "runtime supplies one for a capability this plugin enables "
                f"({', '.join(enabled)}), and send it as written otherwise")
    else:
        fate = "this plugin enables no capability, so libcni (1.1 and 1.3) and cnikit send it to the plugin as written"
    report.warn(json_path(["plugins", index, "runtimeConfig"]),
                f"is reserved for the runtime, which builds it from capability arguments: {fate}; GC and STATUS "
                "always get it as written. To have the runtime pass values, enable the capability (capabilities) "
                "and give them as capability arguments (cni_attach's capability_args)", plugin["runtimeConfig"])


def _check_plugin_envelope(plugin, index: int, conf: dict, report: ValidationReport) -> None:
    path = f"plugins[{index}]"
    if not isinstance(plugin, dict):
        report.error(path, PLUGIN_NOT_AN_OBJECT, plugin)
        return
    plugin_type = plugin.get("type")
    if "type" not in plugin:
        report.error(f"{path}.type", TYPE_MISSING)
    elif not isinstance(plugin_type, str) or not plugin_type:
        report.error(f"{path}.type", "must be a non-empty string", plugin_type)
    elif not is_plugin_file_name(plugin_type):
        report.error(f"{path}.type", f"must be a plugin file name: {PLUGIN_FILE_NAME_RULE}", plugin_type)
    for key in plugin:
        if key == "runtimeConfig":
            _warn_runtime_config(plugin, index, report)
        elif key in RESERVED_KEYS or key.startswith(RESERVED_PREFIX):
            report.error(json_path(["plugins", index, key]),
                         "is reserved: the runtime generates it; it must not be written in a configuration file")
    for key in ("name", "cniVersion"):
        if key in plugin and key in conf and plugin[key] != conf[key]:
            report.warn(f"{path}.{key}", f"differs from the list's {key}, which the runtime injects instead",
                        plugin[key])
    capabilities = plugin.get("capabilities")
    if "capabilities" in plugin:
        if not isinstance(capabilities, dict):
            report.error(f"{path}.capabilities", "must be a map of capability names to booleans", capabilities)
        else:
            for name, enabled in capabilities.items():
                cpath = json_path(["plugins", index, "capabilities", name])
                if not isinstance(enabled, bool):
                    report.error(cpath, "must be a boolean", enabled)
                if name not in KNOWN_CAPABILITIES:
                    close = difflib.get_close_matches(name, KNOWN_CAPABILITIES, n=1, cutoff=0.6)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    report.warn(cpath, f"is not a capability of the CNI conventions{hint}")
    ipam = plugin.get("ipam")
    if "ipam" in plugin and not isinstance(ipam, dict):
        report.error(f"{path}.ipam", "must be an object", ipam)
    elif isinstance(ipam, dict) and "type" in ipam and not is_plugin_file_name(ipam["type"]):
        report.error(f"{path}.ipam.type", f"must be a plugin file name: {PLUGIN_FILE_NAME_RULE}", ipam["type"])
