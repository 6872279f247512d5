# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plugins role's ``--check`` on a fresh minimal Debian host predicts instead of failing
(issue 28): apt cannot predict without python3-apt, pip not without packaging; and the networks
role after it predicts its file unvalidated, since jsonschema comes with the plugins role's run.

The machine stands in for that host: the playbook runs in a mount namespace of its own where a
tmpfs hides /usr/lib/python3/dist-packages, which holds every library the distribution's Python
has beyond its standard library (python3-apt, packaging, setuptools, jsonschema, pyroute2). A
minimal Debian (debootstrap's minbase plus python3) has nothing there either, and the modules run
with that same /usr/bin/python3, which is also the interpreter Ansible's apt module looks for
python3-apt in. The controller's Python (the test's virtualenv) is not affected."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
RELEASE_SERVER = ROOT / "tests" / "utils" / "release_server.py"
DIST_PACKAGES = "/usr/lib/python3/dist-packages"
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cnikit.cni.plugins
      vars:
        cni_plugins_source: mirror
        cni_plugins_version: v1.1.1
        cni_plugins_base_url: "http://127.0.0.1:{{ port }}"
        cni_plugins_dest: "{{ work }}/bin"
        cni_plugins_names: [bridge, loopback]
        cni_plugins_python_deps: "{{ deps }}"
        cni_plugins_virtualenv: "{{ work }}/venv"
    - name: The plugins were predicted
      ansible.builtin.assert:
        that: cni_plugins_result is changed and cni_plugins_result.installed == ['bridge', 'loopback']
    - ansible.builtin.include_role:
        name: cnikit.cni.networks
      vars:
        cni_networks_conf_dir: "{{ work }}/conf"
        cni_networks_cni_path: ["{{ work }}/bin"]
        cni_networks:
          - name: cnit-fresh
            plugins: [{type: bridge, bridge: cnit-fresh0, ipam: {type: host-local, ranges: [[{subnet: 10.250.9.0/24}]]}}]
    - name: The network was predicted, unvalidated (jsonschema comes with the plugins role's real run)
      ansible.builtin.assert:
        that: networks_declared is changed
"""


@pytest.fixture
def release_port(tmp_path):
    """A release server for 1.1.1 (built from /usr/lib/cni) on 127.0.0.1; its port."""
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    port_file = tmp_path / "port"
    server = subprocess.Popen([sys.executable, str(RELEASE_SERVER), str(tmp_path / "releases"), "--arch", arch,
                               "--release", "1.1.1", "--port-file", str(port_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            assert server.poll() is None and time.monotonic() < deadline, "the release server did not start"
            time.sleep(0.1)
        yield port_file.read_text().strip()
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("deps, would_install", [
    ("package", "python3-jsonschema, python3-pyroute2"),
    ("virtualenv", "python3-packaging, python3-venv"),
])
def test_check_mode_predicts_on_a_fresh_host(tmp_path, release_port, deps, would_install):
    if os.geteuid() != 0 or not shutil.which("unshare") or not os.path.isdir(DIST_PACKAGES):
        pytest.skip("needs root, unshare and a Debian Python")
    work = tmp_path / "work"
    work.mkdir()
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount -t tmpfs cnit-fresh "$0" && exec "$@"', DIST_PACKAGES,
         ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", "--check", str(playbook),
         "-e", "ansible_python_interpreter=/usr/bin/python3", "-e", f"port={release_port}",
         "-e", f"work={work}", "-e", f"deps={deps}"],
        capture_output=True, text=True, env={**os.environ, "ANSIBLE_NOCOLOR": "1"}, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "python3-apt" in run.stdout and would_install in run.stdout, run.stdout
    assert "jsonschema is not installed" in run.stdout + run.stderr, run.stdout + run.stderr
    if deps == "virtualenv":
        assert "packaging" in run.stdout and "the virtualenv" in run.stdout, run.stdout
    assert list(work.iterdir()) == [], "check mode wrote something"
