# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Network configuration lists (_conflist): libcni's load-time rules, conf dir order, drop-ins
and problems that do not hide other networks."""

from __future__ import annotations

import json

import pytest

from ansible_collections.cnikit.cni.plugins.module_utils._conflist import (
    find_network, load_conf_dir, needed_binaries, parse_network, parse_network_list, parse_single_conf, render_conflist)
from ansible_collections.cnikit.cni.plugins.module_utils._errors import ConfigError
from ansible_collections.cnikit.cni.plugins.module_utils._validate import validate_network_list


def _conflist(name: str, *types: str, **envelope) -> str:
    return json.dumps(dict({"cniVersion": "1.0.0", "name": name, "plugins": [{"type": t} for t in types]}, **envelope))


def _write(directory, files: dict):
    for relative, content in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)


# -- parsing ------------------------------------------------------------------------------------

def test_parse_keeps_the_exact_bytes_and_reads_the_envelope():
    data = b'{"cniVersion": "1.0.0", "cniVersions": ["1.1.0"], "name": "n", "disableCheck": true,\n "plugins": [{"type": "bridge"}]}'
    network = parse_network_list(data, "/etc/cni/net.d/10-n.conflist")
    assert network.raw_bytes == data
    assert (network.name, network.cni_version, network.cni_versions, network.disable_check,
            network.disable_gc, network.load_only_inlined_plugins) == ("n", "1.0.0", ["1.1.0"], True, False, False)
    assert network.plugins == [{"type": "bridge"}]
    assert network.version() == "1.1.0"
    assert network.version([["1.0.0"]]) == "1.0.0"


@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), ("true", True), ("TRUE", True), ("False", False), ("false", False),
])
@pytest.mark.parametrize("key, attr", [("disableCheck", "disable_check"), ("disableGC", "disable_gc")])
def test_flags_accept_bools_and_bool_strings_like_libcni(key, attr, value, expected):
    network = parse_network_list(json.loads(_conflist("n", "bridge", **{key: value})))
    assert getattr(network, attr) is expected


@pytest.mark.parametrize("conf, path, message", [
    (b"{not json", "f.conflist", "is not valid JSON"),
    (b"[]", "f.conflist", "must be a JSON object"),
    (b'{"plugins":[{"type":"bridge"}]}', "f.conflist: name", "is missing"),
    (b'{"name":7,"plugins":[{"type":"bridge"}]}', "f.conflist: name", "is missing"),
    (b'{"name":"n","cniVersion":1.0,"plugins":[{"type":"bridge"}]}', "f.conflist: cniVersion", "must be a string"),
    (b'{"name":"n","cniVersions":"1.0.0","plugins":[{"type":"bridge"}]}', "f.conflist: cniVersions", "list of version"),
    (b'{"name":"n","cniVersions":[1],"plugins":[{"type":"bridge"}]}', "f.conflist: cniVersions", "list of version"),
    (b'{"name":"n","cniVersions":["1.0.f"],"plugins":[{"type":"bridge"}]}', "f.conflist: cniVersions[0]", "is not a version"),
    (b'{"name":"n","disableCheck":"yes","plugins":[{"type":"bridge"}]}', "f.conflist: disableCheck", "must be a boolean"),
    (b'{"name":"n","disableGC":1,"plugins":[{"type":"bridge"}]}', "f.conflist: disableGC", "must be a boolean"),
    (b'{"name":"n","loadOnlyInlinedPlugins":true}', "f.conflist: plugins", "loadOnlyInlinedPlugins is true"),
    (b'{"name":"n","plugins":[]}', "f.conflist: plugins", "non-empty list"),
    (b'{"name":"n","plugins":{"type":"bridge"}}', "f.conflist: plugins", "non-empty list"),
    (b'{"name":"n"}', "f.conflist: plugins", "no plugin configs found"),
    (b'{"name":"n","plugins":[{"type":"bridge"},{"bridge":"x"}]}', "f.conflist: plugins[1].type", "every plugin needs a type"),
    (b'{"name":"n","plugins":["bridge"]}', "f.conflist: plugins[0]", "must be an object"),
])
def test_parse_rejects_what_libcni_rejects_naming_the_field(conf, path, message):
    with pytest.raises(ConfigError, match=message) as info:
        parse_network_list(conf, "f.conflist")
    assert info.value.path == path


def test_single_conf_is_up_converted_to_a_list_as_libcni_does():
    data = b'{"type":"bridge","name":"mynet","cniVersion":"0.2.0","bridge":"cni0"}'
    network = parse_single_conf(json.loads(data), "/d/10-mynet.conf")
    assert network.name == "mynet" and network.cni_version == "0.2.0"
    assert network.plugins == [json.loads(data)]
    # ConfListFromConf marshals a Go map: sorted keys, compact.
    assert network.raw_bytes == (b'{"cniVersion":"0.2.0","name":"mynet","plugins":[{"bridge":"cni0",'
                                 b'"cniVersion":"0.2.0","name":"mynet","type":"bridge"}]}')


@pytest.mark.parametrize("conf, message", [
    ({"name": "n"}, "every plugin needs a type"),
    ({"type": "bridge"}, "a network needs a name"),
])
def test_single_conf_needs_type_and_name(conf, message):
    with pytest.raises(ConfigError, match=message):
        parse_single_conf(conf, "/d/x.conf")


@pytest.mark.parametrize("conf", [
    {"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge", "mtu": 1500.0}]},
    {"cniVersion": "1.0.0", "name": "n", "type": "bridge", "mtu": 1500.0},
], ids=["list", "single-plugin"])
def test_a_network_given_as_a_mapping_is_the_network_its_text_is(conf):
    """cni_attach's inline config, as a mapping or as JSON text: the same network, cached as the
    same bytes (a whole-number float as Go prints it)."""
    mapping, text = parse_network(conf, "config"), parse_network(json.dumps(conf).encode(), "config")
    assert (mapping.raw, mapping.plugins) == (text.raw, text.plugins)
    assert mapping.plugins[0]["mtu"] == 1500 and isinstance(mapping.plugins[0]["mtu"], int)
    if "type" in conf:
        assert mapping.raw_bytes == text.raw_bytes


@pytest.mark.parametrize("conf", [
    {"name": "n", "plugins": [{"type": "bridge", "mtu": float("nan")}]},
    {"name": "n", "type": "bridge", "mtu": float("nan")},
], ids=["list", "single-plugin"])
def test_a_mapping_with_what_go_refuses_is_refused_as_its_text_is(conf):
    with pytest.raises(ConfigError, match="not a finite number") as info:
        parse_network(conf, "config")
    assert info.value.path.startswith("config: ") and info.value.path.endswith("mtu")


# -- loading a directory ------------------------------------------------------------------------

def test_conf_dir_order_is_sorted_conflists_then_sorted_confs(tmp_path):
    _write(tmp_path, {
        "9-a.conflist": _conflist("a", "p"),
        "10-b.conflist": _conflist("b", "p"),
        "00-c.conf": json.dumps({"name": "c", "type": "p"}),
        "01-d.json": json.dumps({"name": "d", "type": "p"}),
        "05-e.CONFLIST": _conflist("e", "p"),          # extensions are case-sensitive
        "06-f.conflist.bak": _conflist("f", "p"),
        "x.conflist/inner.conflist": _conflist("g", "p"),  # a directory, and no recursion
    })
    loaded = load_conf_dir(str(tmp_path))
    assert [n.name for n in loaded.networks] == ["b", "a", "c", "d"]
    assert loaded.problems == []
    assert loaded.networks[0].source == str(tmp_path / "10-b.conflist")


def test_missing_conf_dir_is_empty(tmp_path):
    loaded = load_conf_dir(str(tmp_path / "missing"))
    assert loaded.networks == [] and loaded.problems == []


def test_broken_file_is_a_problem_that_hides_nothing(tmp_path):
    _write(tmp_path, {"00-broken.conflist": "{", "10-ok.conflist": _conflist("ok", "p"),
                      "20-notype.conf": '{"name":"x"}', "30-ok2.conf": json.dumps({"name": "ok2", "type": "p"})})
    loaded = load_conf_dir(str(tmp_path))
    assert [n.name for n in loaded.networks] == ["ok", "ok2"]
    assert [p.path for p in loaded.problems] == [str(tmp_path / "00-broken.conflist"), str(tmp_path / "20-notype.conf")]
    assert loaded.problems[0].reason.startswith("is not valid JSON")
    assert loaded.problems[1].to_dict() == {"path": str(tmp_path / "20-notype.conf"),
                                            "reason": "type: is missing: every plugin needs a type (got None)"}


def test_unreadable_file_is_a_problem(tmp_path):
    (tmp_path / "00-dangling.conflist").symlink_to(tmp_path / "nowhere")
    _write(tmp_path, {"10-ok.conflist": _conflist("ok", "p")})
    loaded = load_conf_dir(str(tmp_path))
    assert [n.name for n in loaded.networks] == ["ok"]
    assert "No such file or directory" in loaded.problems[0].reason


def test_first_file_declaring_a_name_wins(tmp_path):
    _write(tmp_path, {"10-n.conflist": _conflist("n", "first"), "20-n.conflist": _conflist("n", "second"),
                      "00-n.conf": json.dumps({"name": "n", "type": "single"})})
    assert load_conf_dir(str(tmp_path)).find("n").plugins == [{"type": "first"}]
    assert load_conf_dir(str(tmp_path)).find("other") is None


def test_dropins_are_appended_in_name_order_and_not_cached(tmp_path):
    main = _conflist("n", "bridge")
    _write(tmp_path, {"10-n.conflist": main, "n/20-tuning.conf": '{"type":"tuning"}',
                      "n/10-portmap.conf": '{"type":"portmap"}', "n/30-x.json": '{"type":"ignored"}',
                      "n/40-x.conflist": '{"type":"ignored"}'})
    network = load_conf_dir(str(tmp_path)).find("n")
    assert [p["type"] for p in network.plugins] == ["bridge", "portmap", "tuning"]
    assert network.raw_bytes == main.encode()


def test_dropins_alone_make_a_network(tmp_path):
    _write(tmp_path, {"10-n.conflist": '{"cniVersion":"1.0.0","name":"n"}', "n/a.conf": '{"type":"bridge"}'})
    assert load_conf_dir(str(tmp_path)).find("n").plugins == [{"type": "bridge"}]


@pytest.mark.parametrize("flag", [True, "true"])
def test_load_only_inlined_plugins_ignores_dropins(tmp_path, flag):
    _write(tmp_path, {"10-n.conflist": _conflist("n", "bridge", loadOnlyInlinedPlugins=flag),
                      "n/a.conf": '{"type":"tuning"}'})
    assert load_conf_dir(str(tmp_path)).find("n").plugins == [{"type": "bridge"}]


@pytest.mark.parametrize("files, reason", [
    ({"10-n.conflist": '{"cniVersion":"1.0.0","name":"n"}'}, "no plugin configs found"),
    ({"10-n.conflist": '{"cniVersion":"1.0.0","name":"n"}', "n/a.conf": '{"bridge":"x"}'}, "every plugin needs a type"),
    ({"10-n.conflist": '{"cniVersion":"1.0.0","name":"n","loadOnlyInlinedPlugins":true}', "n/a.conf": '{"type":"x"}'},
     "loadOnlyInlinedPlugins is true"),
])
def test_dropin_problems(tmp_path, files, reason):
    _write(tmp_path, files)
    loaded = load_conf_dir(str(tmp_path))
    assert loaded.networks == []
    assert reason in loaded.problems[0].reason


def test_find_network_lists_unreadable_files_when_the_name_is_missing(tmp_path):
    _write(tmp_path, {"00-bad.conflist": "{", "10-ok.conflist": _conflist("ok", "p")})
    assert find_network(str(tmp_path), "ok").name == "ok"
    with pytest.raises(ConfigError) as info:
        find_network(str(tmp_path), "gone")
    assert info.value.path == "network" and info.value.value == "gone"
    assert f"unreadable files: {tmp_path / '00-bad.conflist'}: is not valid JSON" in str(info.value)


def test_render_conflist_puts_the_envelope_first():
    conf = {"plugins": [{"type": "bridge"}], "extra": 1, "name": "n", "cniVersion": "1.0.0", "disableCheck": True}
    assert render_conflist(conf) == (
        b'{\n  "cniVersion": "1.0.0",\n  "name": "n",\n  "disableCheck": true,\n'
        b'  "plugins": [\n    {\n      "type": "bridge"\n    }\n  ],\n  "extra": 1\n}\n')


def test_whole_number_floats_reach_the_plugins_as_integers_as_libcni_sends_them(tmp_path):
    text = (b'{"cniVersion": "1.0.0", "name": "n", "plugins": [{"type": "bridge", "mtu": 1500.0,'
            b' "x": {"rate": 1e6, "ratio": 0.5, "huge": 1e21, "list": [2.0, -0.0]}}]}')
    expected = {"type": "bridge", "mtu": 1500, "x": {"rate": 1000000, "ratio": 0.5, "huge": 1e21, "list": [2, 0]}}
    network = parse_network_list(text)
    assert network.plugins == [expected]
    assert isinstance(network.plugins[0]["mtu"], int) and isinstance(network.plugins[0]["x"]["huge"], float)
    assert network.raw_bytes == text  # cached as written, as libcni caches the file's bytes
    assert parse_network_list(json.loads(text)).plugins == [expected]
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "10-tuning.conf").write_text('{"type": "tuning", "mtu": 9000.0}')
    (dropin,) = parse_network_list(b'{"cniVersion": "1.0.0", "name": "n"}', conf_dir=str(tmp_path)).plugins
    assert isinstance(dropin["mtu"], int)


@pytest.mark.parametrize("conf, path", [
    ({"plugins": [{"type": "bridge"}]}, "name"),
    ({"name": "n", "cniVersion": 1, "plugins": [{"type": "bridge"}]}, "cniVersion"),
    ({"name": "n", "disableGC": "yes", "plugins": [{"type": "bridge"}]}, "disableGC"),
    ({"name": "n", "plugins": []}, "plugins"),
    ({"name": "n", "loadOnlyInlinedPlugins": True}, "plugins"),
    ({"name": "n", "plugins": ["bridge"]}, "plugins[0]"),
    ({"name": "n", "plugins": [{"bridge": "b"}]}, "plugins[0].type"),
])
def test_loading_and_validation_word_an_envelope_rule_alike(conf, path):
    with pytest.raises(ConfigError) as raised:
        parse_network_list(conf, source="f.conflist")
    assert raised.value.path == f"f.conflist: {path}"
    findings = {f.path: f.message for f in validate_network_list(conf).errors}
    assert findings[path] == raised.value.message


def test_needed_binaries_are_the_plugins_then_their_ipam_types_each_once():
    plugins = [{"type": "bridge", "ipam": {"type": "host-local"}}, {"type": "portmap"}, "not an object",
               {"type": "../evil", "ipam": {"type": "dhcp"}}, {"type": "ptp", "ipam": {"type": "host-local"}},
               {"type": "tuning", "ipam": {"type": "a/b"}}]
    assert needed_binaries(plugins) == ["bridge", "portmap", "ptp", "tuning", "host-local"]
    assert needed_binaries(None) == []
