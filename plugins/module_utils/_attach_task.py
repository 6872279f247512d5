# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""cni_attach's task: its items (``attachments``, or the top level alone) made into declared
attachments over the top-level values, the named namespaces they ask for created, the batch
converged by ``_attach``, and the per-item results gathered into the task's."""

from __future__ import annotations

import threading

from . import _attach, _netns
from ._argspec import ArgumentSpec
from ._cache_dir import warn_of_cache_dir
from ._conflist import load_conf_dir, parse_network, parse_network_list
from ._defaults import DEFAULT_IFNAME
from ._engine import Attachment, Engine
from ._exec import PluginExecutor
from ._errors import CNIError, ConfigError
from ._identifiers import check_plugin_type, cnitool_container_id, netns_name, netns_path, normalise_cni_args
from ._planned import PLANNED_OPTION, planned_config

# The options an item of ``attachments`` may set, each also a top-level option whose value an item
# without it takes (the top level alone has defaults, so that an item's None means "not given").
ITEM_OPTIONS = {
    "network": {"type": "str"}, "config": {"type": "raw"}, "netns": {"type": "str"},
    "ifname": {"type": "str"}, "container_id": {"type": "str"}, "args": {"type": "raw"},
    "capability_args": {"type": "dict"}, "state": {"type": "str", "choices": ["present", "absent"]},
    "create_netns": {"type": "bool"},
}
TOP_LEVEL_DEFAULTS = {"ifname": DEFAULT_IFNAME, "state": "present", "create_netns": False}


def _with_defaults(options: dict, defaults: dict) -> dict:
    return {key: {**spec, "default": defaults[key]} if key in defaults else spec for key, spec in options.items()}


ARGUMENT_SPEC = ArgumentSpec({
    **_with_defaults(ITEM_OPTIONS, TOP_LEVEL_DEFAULTS),
    "run_check": {"type": "bool", "default": True},
    "attachments": {"type": "list", "elements": "dict", "options": ITEM_OPTIONS},
    "parallel": {"type": "int", "default": 4},
    PLANNED_OPTION: {"type": "dict"},
}, mutually_exclusive=(("network", "config"),))


class NetworkSource:
    """Networks by name from the conf dir (loaded once, on first need) or inline configs; in
    check mode, the conflists that cni_network tasks of the play planned come first."""

    def __init__(self, conf_dir: str, planned: dict | None = None):
        self.conf_dir = conf_dir
        self.planned = planned
        self._loaded = None
        self._lock = threading.Lock()

    @staticmethod
    def inline(network):
        def load():
            return network
        return load

    def named(self, name: str):
        def load():
            config = planned_config(self.planned, name, self.conf_dir)
            if config is not None:
                return parse_network_list(config, source=f"{self.conf_dir} (as planned in check mode)")
            with self._lock:
                if self._loaded is None:
                    self._loaded = load_conf_dir(self.conf_dir)
            return self._loaded.require(name, self.conf_dir)
        return load


def inline_network(config, path: str):
    """An inline ``config``: a conflist, or a single-plugin network (a ``.conf``), which libcni
    loads as a one-plugin list (and caches as such)."""
    if isinstance(config, str):
        network = parse_network(config.encode(), source=path)
    elif isinstance(config, dict):
        network = parse_network(config, source=path)
    else:
        raise ConfigError(path, "must be a conflist or a single-plugin network, as a dict or a JSON string", config)
    _check_binary_names(network, path)
    return network


def _check_binary_names(network, path: str) -> None:
    """Each type and ipam.type must name a binary along the plugin path, as cni_network's
    validation requires of what it writes: an IPAM type is run by the plugin, which older
    releases let follow a path out of the plugin directory."""
    for index, plugin in enumerate(network.plugins):
        check_plugin_type(plugin["type"], f"{path}: plugins[{index}].type")
        ipam = plugin.get("ipam")
        if isinstance(ipam, dict) and "type" in ipam:
            check_plugin_type(ipam["type"], f"{path}: plugins[{index}].ipam.type")


def build_desired(spec: dict, path: str, networks: NetworkSource, run_check: bool) -> _attach.Desired:
    if spec["network"] and spec["config"] is not None:
        raise ConfigError(path, "give either network or config, not both", spec["network"])
    if spec["config"] is not None:
        network = inline_network(spec["config"], f"{path}config")
        name, load = network.name, NetworkSource.inline(network)
    elif spec["network"]:
        name, load = spec["network"], networks.named(spec["network"])
    else:
        raise ConfigError(f"{path}network", "a network name or a config is required", None)
    if not spec["netns"]:
        raise ConfigError(f"{path}netns", "a network namespace name or path is required", spec["netns"])
    namespace = netns_path(spec["netns"], f"{path}netns")
    if spec["state"] == "present" and not netns_name(namespace):
        _netns.check_netns_file(namespace, f"{path}netns")
    attachment = Attachment(
        network=name, container_id=spec["container_id"] or cnitool_container_id(namespace),
        netns=namespace, ifname=spec["ifname"],
        cni_args=normalise_cni_args(spec["args"], f"{path}args"),
        capability_args=spec["capability_args"] or {}, option_prefix=path,
    )
    return _attach.Desired(load, attachment, spec["state"], run_check)


def item_specs(params: dict) -> list:
    """The declared attachments: the items of ``attachments`` over the top-level defaults, or the
    top level alone. Each comes with the prefix its error messages use."""
    top = {key: params[key] for key in ITEM_OPTIONS}
    if params["attachments"] is None:
        return [("", top)]
    return [(f"attachments[{i}].", {key: item[key] if item[key] is not None else top[key] for key in ITEM_OPTIONS})
            for i, item in enumerate(params["attachments"])]


def ensure_namespaces(desired: list, specs: list, check_mode: bool) -> list:
    """Create the named namespaces that items asked for, and mark the items whose namespace was
    created (an attachment cached before cannot be in it); return the names (to be) created."""
    created = []
    for item, (_prefix, spec) in zip(desired, specs):
        name = netns_name(item.attachment.netns)
        if not (spec["create_netns"] and item.state == "present" and name) or name in created:
            continue
        if check_mode:
            if not _netns.exists(name):
                created.append(name)
        elif _netns.create(name):
            created.append(name)
    for item in desired:
        item.netns_created = netns_name(item.attachment.netns) in created
    return created


def release_unused_namespaces(created: list, desired: list, outcomes: list, check_mode: bool) -> list:
    """Remove the namespaces this run created for attachments that all failed, so a failed
    task leaves nothing behind; return the created namespaces that stay."""
    kept = []
    for name in created:
        users = [o for d, o in zip(desired, outcomes) if netns_name(d.attachment.netns) == name]
        if users and all(isinstance(o, CNIError) for o in users):
            if not check_mode:
                _netns.remove(name)
            continue
        kept.append(name)
    return kept


def diff_of(items: list) -> dict:
    """One line per changed attachment; a replace or repair, attached before and after, says so
    after, so that a check run's diff shows what it would replace."""
    def line(item, attached, how=""):
        return f"{item['network']}/{item['container_id']}/{item['ifname']}: {'attached' if attached else 'detached'}{how}\n"

    def anew(item):
        return f" ({item['action']})" if item["action"] in _attach.MADE_ANEW else ""
    changed = [i for i in items if i["changed"]]
    return {"before": "".join(line(i, i["action"] in _attach.ATTACHED_BEFORE) for i in changed),
            "after": "".join(line(i, i["state"] == "present", anew(i)) for i in changed)}


def _warn_of_host_namespace(host, declared) -> None:
    """An attachment into the host's own network namespace is allowed (a host-side interface is
    a use), but rarely meant: said, since the plugins then configure the host's interfaces."""
    if declared.state != "present":
        return
    own = _netns.host_namespace_of(declared.attachment.netns)
    if own:
        host.warn(f"{_attach.about(declared)}: netns {declared.attachment.netns} is the host's own network namespace "
                  f"({own}): the plugins will create and configure interfaces, addresses and routes among the host's "
                  "own. Give a container's namespace unless that is what you mean")


def run(host, params: dict, result: dict) -> None:
    """``host`` is the module's ``_ansible_glue.ModuleHost``."""
    if params["create_netns"] or any(item["create_netns"] for item in params["attachments"] or []):
        host.require_libraries("pyroute2")
    if params["parallel"] < 1:
        host.fail(f"parallel: must be at least 1 (got {params['parallel']})")
    # With the module's run_command the executor asks Debian's package which release
    # /usr/lib/cni is, which decides whether CHECK is withheld (a leaking dhcp daemon).
    executor = PluginExecutor(params["cni_path"], params["timeout"], host.run_command)
    engine = Engine(params["cni_path"], params["cache_dir"], params["timeout"], executor=executor)
    warn_of_cache_dir(host, params["cache_dir"])
    networks = NetworkSource(params["conf_dir"], params[PLANNED_OPTION] if host.check_mode else None)
    specs = item_specs(params)
    desired = [build_desired(spec, prefix, networks, params["run_check"]) for prefix, spec in specs]
    for declared in desired:
        _warn_of_host_namespace(host, declared)
    created = ensure_namespaces(desired, specs, host.check_mode)
    outcomes = _attach.converge_all(engine, desired, host.check_mode, params["parallel"])
    created = release_unused_namespaces(created, desired, outcomes, host.check_mode)
    items = [_attach.item_result(d, o) for d, o in zip(desired, outcomes)]
    for item, declared in zip(items, desired):
        for warning in item.get("warnings") or []:
            host.warn(f"{_attach.about(declared)}: {warning}")
    for notice in _attach.notices_of(desired, outcomes):
        host.warn(notice)
    result.update({"changed": bool(created) or any(i["changed"] for i in items), "created_netns": created})
    if host.diff:
        result["diff"] = diff_of(items)
    failed = [i for i in items if i["failed"]]
    if params["attachments"] is None:
        item = items[0]
        item.pop("warnings", None)
        result.update(item)
        if failed:
            result.pop("failed")
            host.fail(result.pop("msg"), **result)
        return
    result["attachments"] = items
    if failed:
        host.fail(f"{len(failed)} of {len(items)} attachments failed; first: {failed[0]['msg']}", **result)
