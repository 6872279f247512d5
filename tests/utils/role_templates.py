# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A role's template rendered by Ansible's own templar, with the role's defaults and vars under the
variables a test gives (as a play gives a role its inventory's and registered variables)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

try:  # ansible-core 2.19 templates only text marked as trusted, as it marks a role's files and vars
    from ansible.template import trust_as_template
except ImportError:  # before 2.19 all text is templated
    def trust_as_template(text: str) -> str:
        return text

ROLES = Path(__file__).resolve().parents[2] / "roles"


def _trusted(value):
    return trust_as_template(value) if isinstance(value, str) else value


def render(role: str, template: str, **variables) -> str:
    """``roles/<role>/templates/<template>`` as the template module writes it."""
    directory = ROLES / role
    role_variables = {}
    for source in (directory / "defaults" / "main.yml", directory / "vars" / "main.yml"):
        role_variables.update(yaml.safe_load(source.read_text(encoding="utf-8")))
    role_variables = {name: _trusted(value) for name, value in role_variables.items()}
    templar = Templar(loader=DataLoader(), variables={**role_variables, **variables})
    return templar.template(_trusted((directory / "templates" / template).read_text(encoding="utf-8")))
