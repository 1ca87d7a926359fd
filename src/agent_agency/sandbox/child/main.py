"""The child's course: read the payload, isolate, then fork the code's process and supervise it.

The process that isolated itself becomes the supervisor, and forks the code's process. Each drops to
a throw-away uid of its own, so the code can neither signal the supervisor nor change its resource
limits (`prlimit` needs the same uid). The code's process runs only once the supervisor has written
the isolation record.
"""

from __future__ import annotations

import json
import os
import signal

# Names, never modules, are imported from this package: `from package import module` imports the
# top-level package `agent_agency` as well.
from agent_agency.sandbox.child.isolation import confine
from agent_agency.sandbox.child.program import MAIN_FILE, run_script, serve, start_code
from agent_agency.sandbox.child.supervisor import start_supervisor, supervise

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agent_agency.sandbox.child.protocol import Payload


def main(payload_fd: int) -> None:
    with os.fdopen(payload_fd, "rb") as handle:
        payload: Payload = json.loads(handle.read())
    config, files = payload["config"], payload["files"]
    confinement = confine(config)
    requests_in, requests_out = os.pipe()
    replies_in, replies_out = os.pipe()
    status_in, status_out = os.pipe()
    go_in, go_out = os.pipe()
    # Should the code's process run as the supervisor's uid after all (no root), its SIGINT must
    # not raise KeyboardInterrupt in the tests (a namespace's first process receives no ignored
    # signal from inside at all). Ignored before the fork, so that no signal arrives in between.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    supervisor_pid = os.getpid()
    code_pid = os.fork()
    if code_pid:
        for fd in (requests_in, replies_out, status_out, go_in):
            os.close(fd)
        start_supervisor(confinement, status_in, go_out)
        supervise(confinement, code_pid, requests_out, replies_in)
    for fd in (
        config["secret_fd"],
        config["verdict_fd"],
        requests_out,
        replies_in,
        status_in,
        go_out,
    ):
        os.close(fd)
    if confinement.alive is not None:
        os.close(confinement.alive)
    work, entry_point = config["work"], config["entry_point"]
    start_code(config["code_uid"], supervisor_pid, status_out, go_in, work, files)
    if entry_point is None:
        run_script(work, files[MAIN_FILE], replies_out)
    else:
        serve(work, files[MAIN_FILE], entry_point, requests_in, replies_out)
