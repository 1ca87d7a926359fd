"""Start the child program: `python -I launch.py PAYLOAD_FD`, this file named by its path.

In isolated mode no PYTHON* variable, user site-packages or script directory shapes the child's
imports. This package is then loaded from its own directory, without `agent_agency` and
`agent_agency.sandbox` above it: nothing of the project but the child is imported, and no path of
the project is added to `sys.path`.
"""

from __future__ import annotations

import importlib.util
import os
import sys

PACKAGE = "agent_agency.sandbox.child"


def load_package() -> None:
    """Make this directory the package `PACKAGE`, so that its modules import one another."""
    directory = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(directory, "__init__.py"), submodule_search_locations=[directory]
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the sandbox's child program from {directory}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)


if __name__ == "__main__":
    load_package()
    from agent_agency.sandbox.child.main import main

    main(int(sys.argv[1]))
