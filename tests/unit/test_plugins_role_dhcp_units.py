# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The plugins role's systemd units of the dhcp daemon, rendered as the role's template task
does (the role refuses systemd mode on hosts that systemd does not run, such as the test
machines, so the integration target cannot write them)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

TEMPLATES = Path(__file__).resolve().parents[2] / "roles" / "plugins" / "templates"


def render(name: str) -> str:
    environment = Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                              keep_trailing_newline=True)
    return environment.get_template(f"{name}.j2").render(
        ansible_managed="Ansible managed", cni_plugins_dest="/opt/cnit/bin", cni_plugins_dhcp_socket="/run/cni/dhcp.sock")


def test_the_socket_unit_listens_on_the_given_socket():
    assert "ListenStream=/run/cni/dhcp.sock\n" in render("cni-dhcp.socket")


def test_the_service_unit_runs_the_installed_binary_on_that_socket_and_needs_the_socket_unit():
    service = render("cni-dhcp.service")
    assert "ExecStart=/opt/cnit/bin/dhcp daemon -socketpath /run/cni/dhcp.sock\n" in service
    assert "Requires=cni-dhcp.socket\n" in service
