# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# This module_utils is PRIVATE and should only be used by this collection.
# It may change at any time, without notice.
"""Network configuration lists: parsing with libcni's load-time rules, loading a conf dir in
libcni's order, and rendering a conflist file."""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field

from ._errors import CNIError, ConfigError
from ._identifiers import is_plugin_file_name
from ._result import select_version, version_key

CONFLIST_EXTENSIONS = (".conflist",)
SINGLE_CONF_EXTENSIONS = (".conf", ".json")
# The files of a conf dir runtimes load networks from (the networks role's purge finds these too).
CONF_FILE_EXTENSIONS = CONFLIST_EXTENSIONS + SINGLE_CONF_EXTENSIONS
DROPIN_EXTENSION = ".conf"
# The boolean flags of the envelope, and the name each goes by in NetworkList and the modules.
FLAG_KEYS = {"disableCheck": "disable_check", "disableGC": "disable_gc",
             "loadOnlyInlinedPlugins": "load_only_inlined_plugins"}
# The envelope's keys besides name and plugins, by the name of their cni_network option.
ENVELOPE_OPTIONS = {"cni_version": "cniVersion", "cni_versions": "cniVersions",
                    **{option: key for key, option in FLAG_KEYS.items()}}
# Every envelope key, in the order a conflist is rendered with.
ENVELOPE_ORDER = ("cniVersion", "cniVersions", "name", *FLAG_KEYS, "plugins")
# The envelope's rules as libcni loads a list, in the one wording both their users give them:
# loading (below) raises the first a list breaks, validation's envelope layer reports each.
NAME_MISSING = "is missing: a network needs a name"
NOT_A_STRING = "must be a string"
NOT_A_BOOLEAN = "must be a boolean"
PLUGINS_NOT_A_LIST = "must be a non-empty list of plugin objects"
PLUGINS_MISSING_WHILE_INLINE_ONLY = "is missing while loadOnlyInlinedPlugins is true"
PLUGIN_NOT_AN_OBJECT = "must be an object"
TYPE_MISSING = "is missing: every plugin needs a type"
# Real conflists nest about six levels; Go reads 10,000, Python's parser about 1,000.
MAX_JSON_DEPTH = 100
# libcni reads a whole conf file into memory, however large (os.ReadFile). Real conflists hold a
# few KiB; 1 MiB leaves room for any hand-made one and stops a sparse file or a runaway generator.
CONF_FILE_LIMIT = 1 << 20


# Go prints a float64 without an exponent below this magnitude, so a whole number reads as an integer.
GO_PLAIN_FLOAT_LIMIT = 1e21


def go_number(text: str):
    """A JSON number with a fraction or exponent as a plugin receives it through libcni, which
    re-encodes every plugin object through a Go map (float64): ``1500.0`` and ``1e6`` arrive as
    the integers 1500 and 1000000; ``1.5`` and ``1e21`` stay floats. A ``parse_float`` hook."""
    return _as_go_prints(float(text))


def _as_go_prints(value: float):
    return int(value) if value.is_integer() and abs(value) < GO_PLAIN_FLOAT_LIMIT else value


def as_libcni_passes(value):
    """``value`` with its whole-number floats turned into integers (see :func:`go_number`),
    copying only the containers that change."""
    if isinstance(value, float):
        return _as_go_prints(value)
    if isinstance(value, dict):
        converted = {key: as_libcni_passes(item) for key, item in value.items()}
        return value if all(converted[key] is value[key] for key in value) else converted
    if isinstance(value, list):
        converted = [as_libcni_passes(item) for item in value]
        return value if all(a is b for a, b in zip(converted, value)) else converted
    return value


def libcni_order(path: str) -> tuple:
    """Sort key of conf dir files as libcni reads them: ``*.conflist`` first, then the rest, each
    by name."""
    return (not path.endswith(CONFLIST_EXTENSIONS), path)


@dataclass
class NetworkList:
    """One network: the envelope's settings and its plugins (inline, then drop-ins)."""

    name: str
    cni_version: str
    plugins: list
    raw: dict
    raw_bytes: bytes  # the exact bytes libcni would cache (the main file only)
    source: str | None = None
    cni_versions: list | None = None
    disable_check: bool = False
    disable_gc: bool = False
    load_only_inlined_plugins: bool = False

    def version(self, plugin_versions: list | None = None) -> str:
        return select_version(self.cni_version, self.cni_versions, plugin_versions)


@dataclass
class LoadProblem:
    """A file in a conf dir that could not be loaded, and why."""

    path: str
    reason: str

    def to_dict(self) -> dict:
        return {"path": self.path, "reason": self.reason}


@dataclass
class ConfDir:
    """Everything a conf dir holds, in libcni's order; ``problems`` never hide other files."""

    networks: list = field(default_factory=list)
    problems: list = field(default_factory=list)

    def find(self, name: str) -> NetworkList | None:
        """The network libcni would pick for ``name``: the first file that declares it."""
        return next((n for n in self.networks if n.name == name), None)

    def require(self, name: str, conf_dir: str) -> NetworkList:
        """:meth:`find`, or a ConfigError that also lists the files of ``conf_dir`` that could
        not be read (one of them may be the network's)."""
        network = self.find(name)
        if network is None:
            message = f"no network with this name in {conf_dir}"
            if self.problems:
                message += "; unreadable files: " + "; ".join(f"{p.path}: {p.reason}" for p in self.problems)
            raise ConfigError("network", message, name)
        return network


def flag_value(value) -> bool | None:
    """An envelope flag as libcni reads it: a JSON bool, or the strings "true"/"false" in any
    case; None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _flag(raw: dict, key: str, where: str) -> bool:
    value = flag_value(raw.get(key, False))
    if value is None:
        raise ConfigError(f"{where}{key}", NOT_A_BOOLEAN, raw[key])
    return value


def _json_path(parts) -> str:
    """``_plugin_rules._common.json_path``, imported when a document is refused: the plugins' rules
    are loaded only by what needs them."""
    from ._plugin_rules._common import json_path  # pylint: disable=import-outside-toplevel  # see the docstring
    return json_path(parts)


def go_json_problem(document) -> ConfigError | None:
    """What Go's JSON decoder (libcni's, so every runtime's) refuses in a document Python
    accepts: a number that is not finite (``NaN``, ``Infinity``, ``1e999``), or nesting deeper
    than MAX_JSON_DEPTH (Python's own parser gives up near 1,000: callers catch its
    RecursionError with :data:`TOO_DEEP`). A ConfigError naming the JSON path, or None."""
    pending = [(document, (), 0)]
    while pending:
        node, parts, depth = pending.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return ConfigError(_json_path(parts), "is not a finite number: Go's JSON decoder, which every runtime "
                               "uses, rejects NaN and Infinity", node)
        if isinstance(node, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                return ConfigError(_json_path(parts), TOO_DEEP)
            children = node.items() if isinstance(node, dict) else enumerate(node)
            pending.extend((child, parts + (key,), depth + 1) for key, child in reversed(list(children)))
    return None


TOO_DEEP = f"is nested more than {MAX_JSON_DEPTH} levels deep"


def _decode(data: bytes | str, where: str) -> dict:
    try:
        raw = json.loads(data, parse_float=go_number)
    except ValueError as exc:
        raise ConfigError(where or "config", f"is not valid JSON: {exc}") from None
    except RecursionError:
        raise ConfigError(where or "config", TOO_DEEP) from None
    if not isinstance(raw, dict):
        raise ConfigError(where or "config", "must be a JSON object", type(raw).__name__)
    _refuse_what_go_refuses(raw, where)
    return raw


def _refuse_what_go_refuses(raw: dict, where: str) -> None:
    problem = go_json_problem(raw)
    if problem:
        raise ConfigError(f"{where or 'config'}: {problem.path}", problem.message, problem.value)


def _as_given(data: bytes | str | dict, where: str) -> tuple:
    """``(object, the bytes libcni would cache)`` of a network given as JSON text, or as a
    mapping (an inline config: its compact JSON), checked as Go's decoder would check its text."""
    if isinstance(data, dict):
        _refuse_what_go_refuses(data, where)
        return as_libcni_passes(data), json.dumps(data, separators=(",", ":")).encode()
    raw_bytes = data.encode() if isinstance(data, str) else data
    return _decode(raw_bytes, where), raw_bytes


def _plugin_object(plugin: object, path: str, type_path: str | None = None) -> dict:
    """``plugin``, once it is an object naming a type, as libcni loads one."""
    if not isinstance(plugin, dict):
        raise ConfigError(path, PLUGIN_NOT_AN_OBJECT, plugin)
    if not isinstance(plugin.get("type"), str) or not plugin.get("type"):
        raise ConfigError(type_path or f"{path}.type", TYPE_MISSING, plugin.get("type"))
    return plugin


def plugin_binaries(plugins) -> list:
    """The binaries a list's plugin objects run: ``[(index, plugin, type, IPAM type or None)]``
    for each object whose ``type`` can name a binary, with its IPAM section's type (which the
    plugin runs), None when there is none or it can name no binary (validation reports those)."""
    found = []
    for index, plugin in enumerate(plugins if isinstance(plugins, list) else []):
        if isinstance(plugin, dict) and is_plugin_file_name(plugin.get("type")):
            ipam = plugin.get("ipam")
            ipam_type = ipam.get("type") if isinstance(ipam, dict) else None
            found.append((index, plugin, plugin["type"], ipam_type if is_plugin_file_name(ipam_type) else None))
    return found


def needed_binaries(plugins) -> list:
    """The names of the binaries a list's plugin objects run, each once, plugins before IPAM."""
    found = plugin_binaries(plugins)
    names = [binary[2] for binary in found] + [binary[3] for binary in found if binary[3]]
    return list(dict.fromkeys(names))


def parse_network_list(data: bytes | str | dict, source: str | None = None, conf_dir: str | None = None) -> NetworkList:
    """Parse a conflist with the checks libcni applies when loading one.

    With ``conf_dir``, plugin objects from ``<conf_dir>/<name>/*.conf`` are appended unless
    ``loadOnlyInlinedPlugins`` is true. Deeper checks live in _validate."""
    return _network_list(*_as_given(data, source or "config"), source, conf_dir)


def _network_list(raw: dict, raw_bytes: bytes, source: str | None, conf_dir: str | None = None) -> NetworkList:
    prefix = f"{source}: " if source else ""
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{prefix}name", NAME_MISSING, name)
    version = raw.get("cniVersion", "")
    if not isinstance(version, str):
        raise ConfigError(f"{prefix}cniVersion", NOT_A_STRING, version)
    versions = raw.get("cniVersions")
    if versions is not None:
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise ConfigError(f"{prefix}cniVersions", "must be a list of version strings", versions)
        for index, item in enumerate(versions):
            try:
                version_key(item)
            except ConfigError:
                raise ConfigError(f"{prefix}cniVersions[{index}]", "is not a version", item) from None
    flags = {attr: _flag(raw, key, prefix) for key, attr in FLAG_KEYS.items()}
    if "plugins" not in raw:
        if flags["load_only_inlined_plugins"]:
            raise ConfigError(f"{prefix}plugins", PLUGINS_MISSING_WHILE_INLINE_ONLY)
        plugins = []
    elif not isinstance(raw["plugins"], list) or not raw["plugins"]:
        raise ConfigError(f"{prefix}plugins", PLUGINS_NOT_A_LIST, raw["plugins"])
    else:
        plugins = [_plugin_object(p, f"{prefix}plugins[{i}]") for i, p in enumerate(raw["plugins"])]
    if conf_dir is not None and not flags["load_only_inlined_plugins"]:
        plugins = plugins + _dropins(conf_dir, name)
    if not plugins:
        raise ConfigError(f"{prefix}plugins", "no plugin configs found (neither inline nor drop-in)")
    return NetworkList(name=name, cni_version=version, plugins=plugins, raw=raw, raw_bytes=raw_bytes,
                       source=source, cni_versions=versions, **flags)


def is_single_conf(conf) -> bool:
    """Whether a network configuration is a deprecated single-plugin network (a ``.conf``): an
    object naming a plugin ``type`` and no ``plugins`` (a list without ``plugins`` names no type:
    libcni loads its plugins from drop-in files)."""
    return isinstance(conf, dict) and "plugins" not in conf and "type" in conf


def single_conf_as_list(conf: dict) -> dict:
    """The one-plugin list libcni's ConfListFromConf makes of a single-plugin network: the list
    takes its ``name`` and ``cniVersion`` (Go's zero value "" when it has none), and its plugin is
    the whole object, those two included (libcni moves no key: a ``disableCheck`` there stays in
    the plugin, where it has no effect). Runtimes cache this list when they attach a ``.conf``,
    so a conflist that holds it is, to them, the same configuration."""
    return {"name": conf.get("name", ""), "cniVersion": conf.get("cniVersion", ""), "plugins": [conf]}


def parse_network(data: bytes | str | dict, source: str) -> NetworkList:
    """A network given whole, as a list or, as libcni loads a ``.conf``, a single-plugin network."""
    raw, raw_bytes = _as_given(data, source)
    if is_single_conf(raw):
        return parse_single_conf(raw, source)
    return _network_list(raw, raw_bytes, source)


def parse_single_conf(conf: dict, source: str) -> NetworkList:
    """A deprecated single-plugin ``.conf``/``.json`` network (its decoded object), up-converted to
    a list as libcni does."""
    listed = single_conf_as_list(_plugin_object(conf, source, f"{source}: type"))
    # Sorted keys: the bytes libcni's ConfListFromConf produces (and caches) from a Go map.
    return _network_list(listed, json.dumps(listed, separators=(",", ":"), sort_keys=True).encode(), source)


def _files(conf_dir: str, extensions: tuple) -> list:
    try:
        names = os.listdir(conf_dir)
    except FileNotFoundError:
        return []
    paths = [os.path.join(conf_dir, n) for n in names if os.path.splitext(n)[1] in extensions]
    return sorted(p for p in paths if not os.path.isdir(p))


def dropin_files(conf_dir: str, name: str) -> list:
    """The drop-in plugin files of network ``name``: ``<conf_dir>/<name>/*.conf``, sorted."""
    return _files(os.path.join(conf_dir, name), (DROPIN_EXTENSION,))


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))
    return next((kind for test, kind in kinds if test(mode)), "not a regular file")


def read_conf_file(path: str) -> bytes:
    """The bytes of conf file ``path`` (a symlink followed, as libcni follows it), never a hang
    or a flood: it is opened without blocking (a FIFO with no writer would block the open, and
    every read after it) and checked with fstat after the open, so what is read is what was
    checked. A FIFO, a device (a link to /dev/zero) or a file over CONF_FILE_LIMIT is a
    ConfigError naming it; FileNotFoundError when there is no such file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ConfigError(path, f"is {_file_kind(mode)}, not a regular file: not loaded (libcni would block "
                              "on it, or read it without end)")
        data = handle.read(CONF_FILE_LIMIT + 1)
    if len(data) > CONF_FILE_LIMIT:
        raise ConfigError(path, f"is larger than {CONF_FILE_LIMIT} bytes, the most a conf file may hold here "
                          "(real ones hold a few KiB): not loaded")
    return data


def _dropins(conf_dir: str, name: str) -> list:
    plugins = []
    for path in dropin_files(conf_dir, name):
        plugins.append(_plugin_object(_decode(read_conf_file(path), path), path, f"{path}: type"))
    return plugins


def _load_file(conf_dir: str, path: str) -> NetworkList:
    data = read_conf_file(path)
    if path.endswith(CONFLIST_EXTENSIONS):
        return parse_network_list(data, path, conf_dir)
    return parse_single_conf(_decode(data, path), path)


def load_conf_dir(conf_dir: str) -> ConfDir:
    """Every network in ``conf_dir`` in libcni's order (sorted ``*.conflist``, then sorted
    ``*.conf``/``*.json``); a broken file becomes a LoadProblem instead of hiding the rest."""
    loaded = ConfDir()
    for path in sorted(_files(conf_dir, CONF_FILE_EXTENSIONS), key=libcni_order):
        try:
            loaded.networks.append(_load_file(conf_dir, path))
        except (CNIError, OSError) as exc:
            loaded.problems.append(LoadProblem(path, str(exc).removeprefix(f"{path}: ")))
    return loaded


def find_network(conf_dir: str, name: str) -> NetworkList:
    """The network named ``name`` as a runtime would load it, or a ConfigError that also lists
    the files that could not be read."""
    return load_conf_dir(conf_dir).require(name, conf_dir)


def render_conflist(conf: dict) -> bytes:
    """A conflist file's bytes: envelope keys first in a fixed order, 2-space indent, newline."""
    ordered = {key: conf[key] for key in ENVELOPE_ORDER if key in conf}
    ordered.update((key, value) for key, value in conf.items() if key not in ordered)
    return (json.dumps(ordered, indent=2) + "\n").encode()
