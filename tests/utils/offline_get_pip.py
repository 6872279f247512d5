"""Offline stand-in for ansible-test's cached get-pip bootstrap script.

ansible-test runs this file as __main__ inside a fresh virtualenv with the pip requirement
(e.g. ``pip==24.2``) and get-pip's own flags as arguments. The standard library's ensurepip
provides a pip without network access; that pip then installs the requested version from the
configured package index.
"""

import ensurepip
import os
import subprocess
import sys

GET_PIP_ONLY_FLAGS = {"--no-setuptools", "--no-wheel"}

# ensurepip points PIP_CONFIG_FILE at /dev/null in os.environ, which would hide the machine's
# pip configuration (package index, CA bundle) from the install below.
environment = dict(os.environ)
ensurepip.bootstrap(upgrade=True)
pip_args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY_FLAGS]
subprocess.check_call([sys.executable, "-m", "pip", "install", *pip_args], env=environment)
