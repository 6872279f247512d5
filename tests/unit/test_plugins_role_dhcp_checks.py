# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plugins role's checks of the dhcp daemon options, run by ansible-playbook in check mode on
nothing there is (state absent, into a directory of the test): a run of the role checks them once,
and dhcp_daemon.yml run alone (tasks_from) still checks them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
# A task of dhcp_daemon_checks.yml that prints its header whether it runs or is skipped.
CHECKS_TASK = "TASK [cnikit.cni.plugins : Refuse a systemd dhcp daemon where systemd does not run]"
PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: cnikit.cni.plugins
        tasks_from: "{{ tasks_from }}"
      vars:
        cni_plugins_state: absent
        cni_plugins_dest: "{{ work }}/bin"
        cni_plugins_dhcp_daemon: "{{ mode }}"
        cni_plugins_dhcp_pidfile: "{{ work }}/dhcp.pid"
        cni_plugins_dhcp_socket: "{{ work }}/dhcp.sock"
        cni_plugins_dhcp_log: "{{ work }}/dhcp.log"
"""


def play(tmp_path, tasks_from: str, mode: str) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir()
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    run = subprocess.run(
        [ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", "--check", str(playbook),
         "-e", f"ansible_python_interpreter={sys.executable}", "-e", f"work={work}", "-e", f"tasks_from={tasks_from}",
         "-e", f"mode={mode}"],
        capture_output=True, text=True, env={**os.environ, "ANSIBLE_NOCOLOR": "1"}, timeout=300, check=False)
    assert list(work.iterdir()) == [], "check mode wrote something"
    return run


def test_a_run_of_the_role_checks_the_dhcp_daemon_options_once(tmp_path):
    # dhcp_daemon.yml, which main.yml includes, checked them a second time.
    run = play(tmp_path, "main.yml", "process")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(CHECKS_TASK) == 1, run.stdout


def test_dhcp_daemon_yml_run_alone_checks_them(tmp_path):
    run = play(tmp_path, "dhcp_daemon.yml", "sytemd")
    assert run.returncode != 0, run.stdout + run.stderr
    assert "cni_plugins_dhcp_daemon must be none, systemd or process (got sytemd)" in run.stdout, run.stdout
