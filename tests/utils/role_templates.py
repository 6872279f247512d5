# Copyright (c) cnikit contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A role's template rendered by Ansible's own templar, with the role's defaults and vars under the
variables a test gives (as a play gives a role its inventory's and registered variables).

The templar runs in a process of its own: importing ansible.template makes an ansible-core 2.19
process a controller, and a module test run later in the same process would lose its warnings to
the display."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"


def render(role: str, template: str, **variables) -> str:
    """``roles/<role>/templates/<template>`` as the template module writes it; ``variables`` must
    be JSON (they cross to the templar's process)."""
    request = json.dumps({"role": role, "template": template, "variables": variables})
    done = subprocess.run([sys.executable, __file__], input=request, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"rendering {role}/templates/{template} failed:\n{done.stderr}")
    return done.stdout


def _render_here(role: str, template: str, variables: dict) -> str:
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    try:  # ansible-core 2.19 templates only text marked as trusted, as it marks a role's files and vars
        from ansible.template import trust_as_template
    except ImportError:  # before 2.19 all text is templated
        def trust_as_template(text: str) -> str:
            return text

    def trusted(value):
        return trust_as_template(value) if isinstance(value, str) else value

    directory = ROLES / role
    role_variables = {}
    for source in (directory / "defaults" / "main.yml", directory / "vars" / "main.yml"):
        role_variables.update(yaml.safe_load(source.read_text(encoding="utf-8")))
    role_variables = {name: trusted(value) for name, value in role_variables.items()}
    templar = Templar(loader=DataLoader(), variables={**role_variables, **variables})
    return templar.template(trusted((directory / "templates" / template).read_text(encoding="utf-8")))


if __name__ == "__main__":
    asked = json.load(sys.stdin)
    sys.stdout.write(_render_here(asked["role"], asked["template"], asked["variables"]))
