# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cni_plugin_install as Ansible runs it: downloads through fetch_url from a release server on
127.0.0.1, JSON out, credentials kept out of it."""

from __future__ import annotations

import json
import os

import pytest
import release_server
from module_harness import patch_module_args

from ansible_collections.cnikit.cni.plugins.modules import cni_plugin_install

VERSION = "1.1.1"
PLUGINS = ["bridge", "host-local", "loopback"]


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    release_server.build_release(str(root), VERSION, "amd64", PLUGINS)
    server, url = release_server.start_server(str(root))
    yield url
    server.shutdown()


def run(capsys, tmp_path, check_mode=False, diff=False, **args):
    args.setdefault("arch", "amd64")
    args["_ansible_check_mode"] = check_mode
    args["_ansible_diff"] = diff
    args["_ansible_remote_tmp"] = str(tmp_path / "remote-tmp")
    with patch_module_args(args), pytest.raises(SystemExit):
        cni_plugin_install.main()
    return json.loads(capsys.readouterr().out)


def test_check_mode_then_install_then_unchanged(base_url, tmp_path, capsys):
    dest = str(tmp_path / "bin")
    checked = run(capsys, tmp_path, check_mode=True, diff=True, version="v" + VERSION, base_url=base_url, dest=dest)
    assert checked["changed"] and checked["downloaded"] and checked["installed"] == PLUGINS
    assert checked["diff"] == {"before": {}, "after": {"format": 2, "sets": {"reference": {
        "version": VERSION, "source": checked["source"], "files": PLUGINS}}}}
    assert checked["set"] == "reference" and checked["foreign"] == []
    assert not os.path.exists(dest)
    installed = run(capsys, tmp_path, version=VERSION, base_url=base_url, dest=dest)
    assert installed["changed"] and installed["installed"] == PLUGINS and "diff" not in installed
    assert installed["plugins"]["bridge"]["cni_versions"][-1] == "1.0.0"
    again = run(capsys, tmp_path, version=VERSION, base_url=base_url, dest=dest)
    assert not again["changed"] and not again["downloaded"]


def test_http_error_names_the_url(base_url, tmp_path, capsys):
    result = run(capsys, tmp_path, version="9.9.9", base_url=base_url, dest=str(tmp_path / "bin"))
    assert result["failed"]
    assert result["msg"].startswith(f"cannot download {base_url}/v9.9.9/cni-plugins-linux-amd64-v9.9.9.tgz: HTTP 404")
    assert not (tmp_path / "bin").exists()


def test_credentials_in_urls_never_reach_the_output(base_url, tmp_path, capsys):
    with_creds = base_url.replace("http://", "http://bob:s3cr3t-pw@")
    installed = run(capsys, tmp_path, version=VERSION, base_url=with_creds, dest=str(tmp_path / "bin"))
    failed = run(capsys, tmp_path, version="9.9.9", base_url=with_creds, dest=str(tmp_path / "bin"))
    assert installed["changed"] and installed["source"].startswith("http://***@127.0.0.1:")
    assert failed["failed"] and "http://***@127.0.0.1:" in failed["msg"]
    assert "s3cr3t-pw" not in json.dumps([installed, failed])


def test_mutually_exclusive_sources(tmp_path, capsys):
    result = run(capsys, tmp_path, src="/tmp/x.tgz", src_dir="/usr/lib/cni", dest=str(tmp_path / "bin"))
    assert result["failed"] and "mutually exclusive: url|src|src_dir" in result["msg"]


def test_bad_version_is_named(tmp_path, capsys):
    result = run(capsys, tmp_path, version="latest", dest=str(tmp_path / "bin"))
    assert result["failed"] and result["msg"].startswith("version: must be a release version of the reference plugins such as 1.9.1 or v1.9.1; ")
    assert result["error"] == {"path": "version", "value": "latest"}


def test_a_set_of_its_own_with_a_renamed_binary(base_url, tmp_path, capsys):
    dest = str(tmp_path / "bin")
    run(capsys, tmp_path, version=VERSION, base_url=base_url, dest=dest)
    site = tmp_path / "site"
    site.mkdir()
    (site / "tool-amd64").write_text("#!/bin/sh\necho '{\"cniVersion\":\"1.0.0\",\"supportedVersions\":[\"1.0.0\"]}'\n")
    (site / "tool-amd64").chmod(0o755)
    result = run(capsys, tmp_path, diff=True, plugin_set="site", version="2024.1", src_dir=str(site),
                 rename={"tool-amd64": "tool"}, dest=dest)
    assert result["changed"] and result["set"] == "site" and result["installed"] == ["tool"]
    assert sorted(result["diff"]["after"]["sets"]) == ["reference", "site"]
    assert sorted(os.listdir(dest)) == sorted(PLUGINS + ["tool", ".cnikit-binaries.json", ".cnikit-manifest.json"])


def test_bad_plugin_set_is_named(tmp_path, capsys):
    result = run(capsys, tmp_path, plugin_set="my set", src_dir="/usr/lib/cni", dest=str(tmp_path / "bin"))
    assert result["failed"] and result["msg"].startswith("plugin_set: must be a name such as reference or flannel")
    assert result["error"] == {"path": "plugin_set", "value": "my set"}
    assert not (tmp_path / "bin").exists()
