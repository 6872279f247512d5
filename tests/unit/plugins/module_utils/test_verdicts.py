# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Remembered validation verdicts (_verdicts), cni_network's and cni_info's: a converged run
reuses the verdict, and a change of any input it depends on makes the next run validate again."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import types
import zipfile

import pytest
from stand_in_host import StandInHost

from ansible_collections.cnikit.cni.plugins.module_utils import _info_task, _network_task, _verdicts
from ansible_collections.cnikit.cni.plugins.module_utils._manifest_file import MANIFEST_NAME
from ansible_collections.cnikit.cni.plugins.module_utils._validation import schema

VERSION_ANSWER = '{"cniVersion": "1.0.0", "supportedVersions": ["0.3.1", "0.4.0", "1.0.0"]}'
BRIDGE = {"type": "bridge", "bridge": "cnit-br0", "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.9.0.0/24"}]]}}


def install_plugin(directory, name: str, answer: str = VERSION_ANSWER) -> str:
    """A plugin binary of its own (its own file identity) that answers VERSION with ``answer``."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w", encoding="ascii") as script:
        script.write(f"#!/bin/sh\necho '{answer}'\n")
    os.chmod(path, 0o755)
    return path


class Network:
    """cni_network on ``conf`` in a conf dir, plugin dir and cache dir of ``tmp_path``, counting the
    validations (the schema layer's runs) of each run."""

    def __init__(self, tmp_path, monkeypatch, plugins=(BRIDGE,)):
        self.conf, self.bin, self.cache = tmp_path / "conf", tmp_path / "bin", tmp_path / "cache"
        for name in ("bridge", "host-local", "tuning", "dhcp"):
            install_plugin(self.bin, name)
        self.tmp_path, self.options = tmp_path, {"plugins": list(plugins)}
        self.validations = []
        schema_findings = schema.schema_findings
        monkeypatch.setattr(schema, "schema_findings",
                            lambda *a: self.validations.append(a[0]) or schema_findings(*a))

    def run(self, **options) -> tuple:
        """(whether it validated, the task's result)."""
        given = dict({"name": "cnit-web", "conf_dir": str(self.conf), "cache_dir": str(self.cache),
                      "cni_path": [str(self.bin)]}, **self.options, **options)
        spec = _network_task.ARGUMENT_SPEC.all_options()
        params = {name: given.get(name, option.get("default")) for name, option in spec.items()}
        params["unsafe_writes"] = False
        self.validations.clear()
        result = {}
        _network_task.run(StandInHost(str(self.tmp_path)), params, result)
        return bool(self.validations), result

    def converged(self, **options) -> None:
        """Written, then a converged run that reuses the verdict."""
        self.run(**options)
        validated, result = self.run(**options)
        assert not validated and not result["changed"]


class Info:
    """cni_info gathering the networks of ``network``'s conf dir, counting its validations."""

    def __init__(self, network: Network):
        self.network = network

    def run(self, check_mode: bool = False, cache_dir=None) -> tuple:
        """(whether it validated, the fact of cnit-web's file)."""
        network = self.network
        params = {"gather": ["networks"], "conf_dir": str(network.conf), "cache_dir": str(cache_dir or network.cache),
                  "cni_path": [str(network.bin)], "timeout": 20}
        network.validations.clear()
        result = {}
        _info_task.run(StandInHost(str(network.tmp_path), check_mode=check_mode), params, result)
        [fact] = [f for f in result["networks"] if f["name"] == "cnit-web"]
        return bool(network.validations), fact

    def converged(self) -> None:
        """cnit-web written, then gathered twice: the second reuses the first's verdict."""
        self.network.run()
        assert self.run()[0]
        assert not self.run()[0]


@pytest.fixture
def network(tmp_path, monkeypatch):
    return Network(tmp_path, monkeypatch)


@pytest.fixture
def info(network):
    return Info(network)


def test_a_converged_run_reuses_the_verdict_with_its_warnings(network):
    network.options["plugins"] = [dict(BRIDGE, ipam={"type": "host-local", "subnet": "10.9.0.0/24"})]  # a flat subnet: warned
    validated, written = network.run()
    again, converged = network.run()
    assert validated and not again and not converged["changed"]
    assert converged["validation_warnings"] == written["validation_warnings"] != []
    assert converged["config"] == written["config"]


def test_spelt_numbers_are_coerced_as_when_validated(network):
    network.options["plugins"] = [dict(BRIDGE, mtu="1400")]
    _validated, written = network.run()
    again, converged = network.run()
    assert not again and converged["config"] == written["config"] and written["config"]["plugins"][0]["mtu"] == 1400


def test_another_declaration_is_validated(network):
    network.converged()
    network.options["plugins"] = [dict(BRIDGE, mtu=1400)]
    assert network.run()[0]


def test_another_network_in_the_conf_dir_invalidates_the_verdict(network):
    network.converged()
    (network.conf / "20-other.conflist").write_text(json.dumps(
        {"cniVersion": "1.0.0", "name": "other", "plugins": [dict(BRIDGE, bridge="cnit-br1")]}))
    validated, result = network.run(validate="warn")
    assert validated and "overlaps" in result["validation_errors"][0]["message"]


def test_a_changed_neighbour_invalidates_the_verdict(network):
    other = network.conf / "20-other.conflist"
    network.conf.mkdir()
    other.write_text(json.dumps({"cniVersion": "1.0.0", "name": "other", "plugins": [{"type": "loopback"}]}))
    network.converged()
    other.write_text(json.dumps({"cniVersion": "1.0.0", "name": "other", "plugins": [dict(BRIDGE, bridge="cnit-br1")]}))
    assert network.run(validate="warn")[0]


def test_a_drop_in_file_invalidates_the_verdict(network):
    network.converged()
    (network.conf / "cnit-web").mkdir()
    (network.conf / "cnit-web" / "extra.conf").write_text("{}")
    assert network.run()[0]


def test_a_replaced_binary_invalidates_the_verdict(network):
    network.converged()
    os.unlink(network.bin / "bridge")
    install_plugin(network.bin, "bridge", '{"cniVersion": "0.4.0", "supportedVersions": ["0.3.1", "0.4.0"]}')
    validated, result = network.run(validate="warn")
    assert validated and "does not support it" in result["validation_errors"][0]["message"]


def test_a_binary_shadowing_it_earlier_in_cni_path_invalidates_the_verdict(network, tmp_path):
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    network.converged(cni_path=[str(earlier), str(network.bin)])
    install_plugin(earlier, "host-local")
    assert network.run(cni_path=[str(earlier), str(network.bin)])[0]


def test_a_manifest_beside_the_binaries_invalidates_the_verdict(network):
    network.converged()
    (network.bin / MANIFEST_NAME).write_text(json.dumps({"format": 2, "sets": {"reference": {
        "version": "1.1.1", "files": {"bridge": "0" * 64}}}}))
    assert network.run()[0]


def test_checking_the_binaries_or_not_are_two_verdicts(network):
    network.converged(check_plugins=False)
    assert network.run(check_plugins=True)[0]
    assert not network.run(check_plugins=True)[0]


def test_what_the_checks_read_of_the_host_invalidates_the_verdict(tmp_path, monkeypatch):
    """The dhcp IPAM's check reads its daemon's socket: the verdict holds while it reads the same."""
    daemon = tmp_path / "dhcp.sock"
    network = Network(tmp_path, monkeypatch, dhcp_network(daemon))
    network.run()
    validated, no_daemon = network.run()
    assert not validated and no_daemon_warnings(no_daemon["validation_warnings"])
    with listening_on(daemon):
        validated, daemon_up = network.run()
    assert validated and not no_daemon_warnings(daemon_up["validation_warnings"])


def dhcp_network(daemon) -> list:
    """The plugins of a network whose dhcp IPAM asks the daemon on the socket ``daemon``."""
    return [{"type": "bridge", "bridge": "cnit-br0", "ipam": {"type": "dhcp", "daemonSocketPath": str(daemon)}}]


@contextlib.contextmanager
def listening_on(path):
    """A daemon's socket at ``path``, accepting connections."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listening:
        listening.bind(str(path))
        listening.listen()
        yield


def no_daemon_warnings(findings: list) -> list:
    return [w for w in findings if "no dhcp daemon" in w["message"]]


def test_another_collection_code_invalidates_the_verdict(network, monkeypatch):
    network.converged()
    monkeypatch.setattr(_verdicts, "collection_code_digest", lambda: "another release")
    assert network.run()[0]


def test_the_code_digest_follows_the_collections_source(tmp_path, monkeypatch):
    first = _verdicts.collection_code_digest()
    assert first == _verdicts.collection_code_digest()
    copy = tmp_path / "module_utils"
    copy.mkdir()
    (copy / "_a.py").write_text("A = 1\n")
    monkeypatch.setattr(_verdicts, "__file__", str(copy / "_verdicts.py"))
    before = _verdicts.collection_code_digest()
    (copy / "_a.py").write_text("A = 2\n")
    assert _verdicts.collection_code_digest() != before != first


def _payload(path, files: dict) -> str:
    """A zip laid out as an AnsiballZ payload, with ``files`` under the collection's module_utils."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name if name.startswith("ansible/") else PAYLOAD_PREFIX + name, text)
    return str(path)


PAYLOAD_PREFIX = "ansible_collections/cnikit/cni/plugins/module_utils/"
PAYLOAD_FILES = {"_a.py": "A = 1\n", "_plugin_rules/bridge.py": "B = 1\n", "ansible/module_utils/basic.py": "X = 1\n"}


@pytest.mark.parametrize("change", [
    {"_a.py": "A = 2\n"},  # the same size, another content
    {"_a.py": "A = 10\n"},
    {"_plugin_rules/bridge.py": "B = 2\n"},
    {"_b.py": "A = 1\n"},  # a file added
])
def test_the_payloads_code_digest_follows_each_file_of_the_collection(tmp_path, change):
    before = _verdicts.archive_code_digest(_payload(tmp_path / "before.zip", PAYLOAD_FILES), PAYLOAD_PREFIX)
    assert before == _verdicts.archive_code_digest(_payload(tmp_path / "same.zip", PAYLOAD_FILES), PAYLOAD_PREFIX)
    after = _verdicts.archive_code_digest(_payload(tmp_path / "after.zip", dict(PAYLOAD_FILES, **change)), PAYLOAD_PREFIX)
    assert after != before


def test_the_payloads_code_digest_follows_a_renamed_or_removed_file(tmp_path):
    before = _verdicts.archive_code_digest(_payload(tmp_path / "before.zip", PAYLOAD_FILES), PAYLOAD_PREFIX)
    renamed = {"_c.py" if n == "_a.py" else n: t for n, t in PAYLOAD_FILES.items()}
    removed = {n: t for n, t in PAYLOAD_FILES.items() if n != "_a.py"}
    assert _verdicts.archive_code_digest(_payload(tmp_path / "renamed.zip", renamed), PAYLOAD_PREFIX) != before
    assert _verdicts.archive_code_digest(_payload(tmp_path / "removed.zip", removed), PAYLOAD_PREFIX) != before


def test_in_a_payload_the_code_digest_is_the_zips(tmp_path, monkeypatch):
    archive = _payload(tmp_path / "payload.zip", PAYLOAD_FILES)
    monkeypatch.setattr(_verdicts, "__loader__", types.SimpleNamespace(archive=archive))
    monkeypatch.setattr(_verdicts, "__file__", os.path.join(archive, PAYLOAD_PREFIX, "_verdicts.py"))
    assert _verdicts.collection_code_digest() == _verdicts.archive_code_digest(archive, PAYLOAD_PREFIX)


def test_the_payloads_code_digest_is_of_the_collections_files_only(tmp_path):
    """ansible-core's own files in the payload are no input: the same for every collection."""
    before = _verdicts.archive_code_digest(_payload(tmp_path / "before.zip", PAYLOAD_FILES), PAYLOAD_PREFIX)
    other_core = dict(PAYLOAD_FILES, **{"ansible/module_utils/basic.py": "X = 2\n"})
    assert _verdicts.archive_code_digest(_payload(tmp_path / "after.zip", other_core), PAYLOAD_PREFIX) == before


@pytest.mark.parametrize("spoil", ["corrupt", "writable by others", "not ours"])
def test_an_entry_that_cannot_be_trusted_is_a_miss(network, spoil):
    network.converged()
    [entry] = list((network.cache / _verdicts.VERDICTS_SUBDIR).iterdir())
    if spoil == "corrupt":
        entry.write_text("{not json")
    elif spoil == "writable by others":
        entry.chmod(0o666)
    else:
        os.chown(entry, 65534, 65534)
    validated, result = network.run()
    assert validated and not result["changed"]


def test_a_verdict_with_errors_is_not_remembered(network):
    network.options["plugins"] = [dict(BRIDGE, mtu=-1)]
    network.run(validate="warn")
    assert network.run(validate="warn")[0]


def test_check_mode_and_validate_only_remember_nothing(network):
    network.run(validate_only=True)
    assert not (network.cache / _verdicts.VERDICTS_SUBDIR).exists()


def test_removing_the_network_forgets_every_verdict_of_it_and_leaves_no_trace(network, info):
    network.converged()
    info.run()
    assert len(list((network.cache / _verdicts.VERDICTS_SUBDIR).iterdir())) == 2
    network.run(state="absent")
    assert not (network.cache / _verdicts.VERDICTS_SUBDIR).exists()


# -- cni_info's verdicts --------------------------------------------------------------------------

def test_cni_info_reuses_its_verdict_with_its_warnings(network, info):
    network.options["plugins"] = [dict(BRIDGE, ipam={"type": "host-local", "subnet": "10.9.0.0/24"})]  # a flat subnet: warned
    network.run()
    validated, first = info.run()
    again, gathered = info.run()
    assert validated and not again
    assert gathered == first and gathered["warnings"] != [] and gathered["valid"]


def test_cni_info_and_cni_network_keep_verdicts_of_their_own(network, info):
    """Each validates another configuration (what the task declares, what the file holds): the
    two entries of one file never replace each other."""
    network.converged()
    info.converged()
    assert not network.run()[0]
    assert not info.run()[0]


def _rewrite_the_file(network):
    network.options["plugins"] = [dict(BRIDGE, mtu=1400)]
    network.run()


def _add_a_network(network):
    (network.conf / "20-other.conflist").write_text(json.dumps(
        {"cniVersion": "1.0.0", "name": "other", "plugins": [{"type": "loopback"}]}))


def _add_a_drop_in(network):
    (network.conf / "cnit-web").mkdir()
    (network.conf / "cnit-web" / "extra.conf").write_text(json.dumps({"type": "tuning"}))


def _replace_a_binary(network):
    os.unlink(network.bin / "bridge")
    install_plugin(network.bin, "bridge", '{"cniVersion": "0.4.0", "supportedVersions": ["0.3.1", "0.4.0"]}')


def _add_a_manifest(network):
    (network.bin / MANIFEST_NAME).write_text(json.dumps({"format": 2, "sets": {"reference": {
        "version": "1.1.1", "files": {"bridge": "0" * 64}}}}))


@pytest.mark.parametrize("change", [_rewrite_the_file, _add_a_network, _add_a_drop_in, _replace_a_binary,
                                    _add_a_manifest])
def test_a_changed_input_invalidates_cni_infos_verdict(network, info, change):
    info.converged()
    change(network)
    assert info.run()[0]


def test_another_collection_code_invalidates_cni_infos_verdict(info, monkeypatch):
    info.converged()
    monkeypatch.setattr(_verdicts, "collection_code_digest", lambda: "another release")
    assert info.run()[0]


def test_what_cni_infos_checks_read_of_the_host_invalidates_its_verdict(tmp_path, monkeypatch):
    daemon = tmp_path / "dhcp.sock"
    info = Info(Network(tmp_path, monkeypatch, dhcp_network(daemon)))
    info.converged()
    with listening_on(daemon):
        validated, daemon_up = info.run()
    assert validated and not no_daemon_warnings(daemon_up["warnings"])


def test_cni_info_keeps_no_verdict_in_check_mode(network, info):
    network.run()
    assert info.run(check_mode=True)[0]
    assert info.run(check_mode=True)[0]
    assert len(list((network.cache / _verdicts.VERDICTS_SUBDIR).iterdir())) == 1  # cni_network's


def test_cni_info_makes_no_cache_directory(network, info, tmp_path):
    network.run()
    absent = tmp_path / "no-cache-yet"
    assert info.run(cache_dir=absent)[0]
    assert info.run(cache_dir=absent)[0] and not absent.exists()


def test_cni_info_remembers_no_verdict_with_errors(network, info):
    network.options["plugins"] = [dict(BRIDGE, mtu=-1)]
    network.run(validate="warn")
    validated, fact = info.run()
    assert validated and not fact["valid"]
    assert info.run()[0]
