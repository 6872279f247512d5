# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Property-based fuzzing (hypothesis) of the three parsers that read what others wrote: the
conflist validator and loader, the plugin result parser and converter, and the cache reader.
Generated and mutated inputs must never raise anything but the collection's own errors, and
every rejection must name where it is: a JSON path whose parent exists in the document."""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path

import pytest
from conftest import FULL, count
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ansible_collections.cnikit.cni.plugins.module_utils import _cache
from ansible_collections.cnikit.cni.plugins.module_utils._plugin_rules import registry
from ansible_collections.cnikit.cni.plugins.module_utils._conflist import parse_network_list
from ansible_collections.cnikit.cni.plugins.module_utils._engine import Engine, network_at_add
from ansible_collections.cnikit.cni.plugins.module_utils._errors import CNIError, ConfigError, PluginError, PluginNotFoundError
from ansible_collections.cnikit.cni.plugins.module_utils._identifiers import AttachmentKey
from ansible_collections.cnikit.cni.plugins.module_utils._result import KNOWN_VERSIONS, ResultError, convert, summarise
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_text

EXAMPLES = count(1500, 20000)
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not FULL,
                suppress_health_check=list(HealthCheck))
CORPUS = sorted((Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "conflists").glob("*/*.conflist"))
VALID_CORPUS = [json.loads(p.read_text()) for p in CORPUS if p.parent.name == "valid"]

# -- value strategies -----------------------------------------------------------------------------

SCALARS = (st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=16)
PLAUSIBLE = st.sampled_from([
    "10.0.0.0/24", "10.0.0.1", "10.0.0.300/24", "010.0.0.0/24", "fd00::/64", "fd00::1/64", "0.0.0.0/0",
    "eth0", "eth0.100", "", " ", "a/b", "..", "x" * 300, "tcp", "udp", "sctp", "1500", "-1", "true",
    "net.ipv4.conf.eth0.rp_filter", "00:11:22:33:44:55", "host-local", "static", "dhcp", "l2", "bridge",
    0, 1, -1, 1500, 65536, 2 ** 31, 2 ** 64, 1.5, True, False, None, [], {},
])
VALUES = (PLAUSIBLE | JSON).map(copy.deepcopy)  # mutations must never alter the shared [] and {}
KEYS = sorted({key for schema in list(registry.PLUGIN_SCHEMAS.values()) + list(registry.IPAM_SCHEMAS.values())
               for key in schema.get("properties", {})} | {"runtimeConfig", "args", "prevResult", "cni.dev/x"})
TYPES = st.sampled_from(sorted(registry.PLUGIN_SCHEMAS) + ["flannel", "noop", "../bin/sh", ""]) | JSON
VERSIONS = st.sampled_from(list(KNOWN_VERSIONS) + ["", "1.1", "2.0.0", "0.4", "v1.0.0", "1.0.0.0"]) | JSON
NAMES = st.sampled_from(["net1", "a.b_c-d", "bad/name", "..", "", "x" * 300, "-lead", "tab\tname"]) | JSON


@st.composite
def plugins(draw):
    plugin = {"type": draw(TYPES)}
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=6)):
        plugin[key] = draw(VALUES)
    if draw(st.booleans()):
        ipam = {"type": draw(st.sampled_from(sorted(registry.IPAM_SCHEMAS) + ["whereabouts"]) | JSON)}
        for key in draw(st.lists(st.sampled_from(KEYS), max_size=5)):
            ipam[key] = draw(VALUES)
        if draw(st.booleans()):
            ipam["ranges"] = draw(st.lists(st.lists(st.fixed_dictionaries(
                {"subnet": PLAUSIBLE}, optional={"gateway": PLAUSIBLE, "rangeStart": PLAUSIBLE, "rangeEnd": PLAUSIBLE}),
                max_size=2), max_size=2))
        plugin["ipam"] = ipam
    return plugin


@st.composite
def generated_conflists(draw):
    conf = {}
    for key, strategy in (("cniVersion", VERSIONS), ("name", NAMES), ("cniVersions", st.lists(VERSIONS, max_size=3) | JSON),
                          ("disableCheck", VALUES), ("disableGC", VALUES), ("loadOnlyInlinedPlugins", VALUES)):
        if draw(st.integers(0, 9)) < (8 if key in ("cniVersion", "name") else 1):
            conf[key] = draw(strategy)
    conf["plugins"] = draw(st.lists(plugins(), min_size=0, max_size=4) | JSON)
    return conf


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, prefix + (index,))


def _get(node, path):
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated(draw, documents):
    """A document with one to four structural mutations: delete, replace, insert, retype."""
    document = json.loads(json.dumps(draw(st.sampled_from(documents))))
    for _mutation in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(list(_paths(document))))
        operation = draw(st.sampled_from(["delete", "replace", "insert", "wrap"]))
        if not path:
            if operation == "replace":
                document = draw(VALUES)
            continue
        parent, last = _get(document, path[:-1]), path[-1]
        if operation == "delete":
            del parent[last]
        elif operation == "replace":
            parent[last] = draw(VALUES)
        elif operation == "wrap":
            parent[last] = [parent[last]]
        elif isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(KEYS) | st.text(max_size=8))] = draw(VALUES)
        elif isinstance(parent[last], list):
            parent[last].insert(draw(st.integers(0, len(parent[last]))), draw(VALUES))
    return document


@st.composite
def texts(draw, documents):
    """Serialised documents, sometimes damaged as text: cut short, a byte changed, a key doubled."""
    text = json.dumps(draw(documents)).encode()
    damage = draw(st.sampled_from(["none", "none", "truncate", "byte", "duplicate"]))
    if damage == "truncate" and text:
        text = text[: draw(st.integers(0, len(text) - 1))]
    elif damage == "byte" and text:
        index = draw(st.integers(0, len(text) - 1))
        text = text[:index] + bytes([draw(st.integers(0, 255))]) + text[index + 1:]
    elif damage == "duplicate" and text.startswith(b"{") and len(text) > 2:
        text = b'{"name":"dup",' + text[1:]
    return text


CONFLIST_TEXTS = texts(generated_conflists() | mutated(VALID_CORPUS))

# -- the JSON path property -----------------------------------------------------------------------

_TOKEN = re.compile(r'\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def _tokens(path: str) -> list:
    tokens, position = [], 0
    while position < len(path):
        match = _TOKEN.match(path, position)
        assert match, f"not a JSON path: {path!r}"
        name, index, quoted = match.groups()
        tokens.append(name if name is not None else int(index) if index is not None else json.loads(quoted))
        position = match.end()
    return tokens


def assert_names_a_place(path: str, document) -> None:
    """``path`` is a JSON path into ``document`` whose parent exists (the last part may be the
    key that is missing); the empty path is the document itself."""
    assert isinstance(path, str)
    node = document
    for part in _tokens(path)[:-1]:
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            # Paths may address a parsed value inside a string (e.g. a CIDR's prefix); stop there.
            assert isinstance(node, (str, int, float)) and not isinstance(node, bool), \
                f"{path!r} does not lead into the document at {part!r}"
            return


# -- validator and loader -------------------------------------------------------------------------

INSTALLED = {"bridge": ["0.3.1", "0.4.0", "1.0.0"], "tuning": ["0.4.0", "1.0.0"], "portmap": ["1.0.0", "1.1.0"],
             "host-local": ["1.0.0"]}


def installed_versions(plugin_type):
    if plugin_type not in INSTALLED:
        raise PluginNotFoundError(str(plugin_type), ["/opt/cni/bin"])
    return INSTALLED[plugin_type]


@FUZZ
@given(CONFLIST_TEXTS, st.booleans())
# Crashes the fuzzer found (TypeError / AttributeError in the semantic checks), kept as examples.
@example(b'{"cniVersion": "0.4.0", "name": "n", "plugins": true}', False)
@example(b'{"name": "n", "plugins": [{"type": "ptp"}, {"type": "portmap", "capabilities": "true"}]}', False)
@example(b'{"cniVersion": "0.4.0", "name": "n", "plugins": [{"type": "bridge", "ipam": {"type": "host-local", "ranges": 1}}]}',
         False)
@example(b'{"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge", "vlanTrunk": 5}]}', True)
@example(b'{"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge", "capabilities": [1], '
         b'"ipam": {"type": "host-local"}}]}', True)
def test_validator_never_crashes_and_names_a_json_path(text, with_installed):
    data, report = validate_text(text, installed_versions=installed_versions if with_installed else None)
    for finding in report.errors + report.warnings:
        assert finding.message
        if data is None or not isinstance(data, dict):
            continue
        assert_names_a_place(finding.path, data)
    if isinstance(data, dict) and not report.ok:
        assert all(f.path for f in report.errors), report.errors


@FUZZ
@given(CONFLIST_TEXTS)
def test_loader_raises_only_config_errors_with_a_path(text):
    try:
        parse_network_list(text, source="/etc/cni/net.d/10-x.conflist")
    except ConfigError as exc:
        assert exc.path.startswith("/etc/cni/net.d/10-x.conflist")
    except CNIError as exc:  # pragma: no cover - reported with its type
        pytest.fail(f"{type(exc).__name__} instead of a ConfigError: {exc}")


# -- result parser ---------------------------------------------------------------------------------

ADDRESSES = st.sampled_from(["10.1.2.3/24", "fd00::2/64", "10.1.2.3", "bogus", "", "300.1.1.1/8"]) | JSON
IPS = st.lists(st.fixed_dictionaries({"address": ADDRESSES}, optional={
    "gateway": ADDRESSES, "interface": VALUES, "version": st.sampled_from(["4", "6"]) | JSON}) | JSON, max_size=3)
ROUTES = st.lists(st.fixed_dictionaries({"dst": ADDRESSES}, optional={"gw": ADDRESSES}) | JSON, max_size=3)
INTERFACES = st.lists(st.fixed_dictionaries({"name": VALUES}, optional={
    "mac": VALUES, "sandbox": VALUES, "mtu": VALUES, "socketPath": VALUES, "pciID": VALUES}) | JSON, max_size=3)
LEGACY_IP = st.fixed_dictionaries({"ip": ADDRESSES}, optional={"gateway": ADDRESSES, "routes": ROUTES | JSON}) | JSON
RESULTS = st.fixed_dictionaries({}, optional={
    "cniVersion": VERSIONS, "ips": IPS | JSON, "routes": ROUTES | JSON, "interfaces": INTERFACES | JSON,
    "dns": JSON, "ip4": LEGACY_IP, "ip6": LEGACY_IP})
GOLDEN = [
    {"cniVersion": "1.0.0", "interfaces": [{"name": "eth0", "mac": "0a:58:0a:01:02:03", "sandbox": "/var/run/netns/x"}],
     "ips": [{"address": "10.1.2.3/24", "gateway": "10.1.2.1", "interface": 0}], "routes": [{"dst": "0.0.0.0/0"}],
     "dns": {"nameservers": ["10.1.2.1"]}},
    {"cniVersion": "0.4.0", "ips": [{"version": "6", "address": "fd00::2/64"}], "routes": [{"dst": "::/0", "gw": "fd00::1"}]},
    {"cniVersion": "0.2.0", "ip4": {"ip": "10.1.2.3/24", "gateway": "10.1.2.1", "routes": [{"dst": "0.0.0.0/0"}]}},
]
RESULT_DOCUMENTS = RESULTS | mutated(GOLDEN)


def _check_result_error(exc: ResultError) -> None:
    assert exc.path, exc
    top = exc.path.split("[")[0].split(".")[0]
    assert top in ("result", "cniVersion", "ips", "routes", "interfaces", "dns", "ip4", "ip6"), exc.path


@FUZZ
@given(texts(RESULT_DOCUMENTS), st.sampled_from(KNOWN_VERSIONS))
def test_result_parser_and_converter_raise_only_their_errors(stdout, version):
    try:
        result = Engine._parse_result({"type": "fuzz"}, stdout, version)  # pylint: disable=protected-access
    except PluginError as exc:
        assert exc.plugin == "fuzz" and exc.verb == "ADD"
        return
    for target in KNOWN_VERSIONS:
        try:
            converted = convert(result, target)
        except ResultError as exc:
            _check_result_error(exc)
            continue
        summary = summarise(converted)
        assert isinstance(summary["ips"], list)
        json.dumps(converted)


# -- cache reader ----------------------------------------------------------------------------------

@st.composite
def cache_files(draw):
    entry = {"kind": "cniCacheV1", "containerId": "c1", "ifName": "eth0", "networkName": "net1",
             "config": base64.b64encode(json.dumps(draw(st.sampled_from(VALID_CORPUS))).encode()).decode(),
             "netns": "/var/run/netns/x", "result": draw(st.sampled_from(GOLDEN) | RESULTS)}
    if draw(st.booleans()):
        entry["cniArgs"] = [["K8S_POD_NAME", "x"]]
        entry["capabilityArgs"] = {"portMappings": [{"hostPort": 8080, "containerPort": 80}]}
    document = draw(st.just(entry) | mutated([entry]))
    return draw(texts(st.just(document)))


@FUZZ
@given(cache_files() | st.binary(max_size=200))
@example(b'{"kind": "cniCacheV1", "containerId": "c1", "ifName": "eth0", "networkName": "net1", "config": "\\u0080"}')
def test_cache_reader_raises_only_cache_errors_and_del_can_proceed(data):
    path = "/var/lib/cni/results/net1-c1-eth0"
    try:
        entry = _cache._parse(path, data, AttachmentKey("net1", "c1", "eth0"))  # pylint: disable=protected-access
    except _cache.CacheError as exc:
        assert exc.path == path and str(exc).startswith(f"unusable cache file {path}: ")
        return
    # What DEL does with a usable entry: the cached network and the result as prevResult.
    if entry.config is not None:
        try:
            network_at_add(entry)
        except ConfigError as exc:
            assert exc.path
    if entry.result is not None:
        for version in KNOWN_VERSIONS:
            try:
                convert(entry.result, version)
            except ResultError as exc:
                _check_result_error(exc)
