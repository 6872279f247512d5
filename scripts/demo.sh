#!/usr/bin/env bash
# The main job: prepare the machine, build and install the collection as a user would, and run
# playbooks/demo.yml on this host. Extra arguments go to ansible-playbook (e.g. -e, -v, --check).
# Run as root on Debian 12 from anywhere: ./scripts/demo.sh
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

playbook="$REPO_ROOT/playbooks/demo.yml"
if [[ ! -f "$playbook" ]]; then
  echo "demo.sh: $playbook does not exist yet; it lands together with the modules it runs." >&2
  exit 1
fi

setup_all
log "building and installing the collection into $INSTALLED_COLLECTIONS"
build_and_install_collection >/dev/null
log "running $playbook"
# The modules run with the virtualenv's Python, which has pyroute2 and jsonschema.
ANSIBLE_COLLECTIONS_PATH="$INSTALLED_COLLECTIONS" ansible-playbook -i localhost, -c local \
  -e ansible_python_interpreter="$VENV/bin/python" "$playbook" "$@"
