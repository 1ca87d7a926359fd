"""The child program of a sandboxed run: it isolates itself, then runs the code and supervises it.

The parent starts it as `python -I <this directory>/launch.py FD` (see `launch`), FD naming the
file that holds its `protocol.Payload`. Every module here imports the standard library only, and
only its cheapest modules, as it is on the critical path of every run: annotations come from
`typing` for the type checker alone (`TYPE_CHECKING = False` at run time).

- `isolation`: namespaces, what is hidden, resource limits, the throw-away users;
- `program`: the process that runs the code;
- `supervisor`: the process that runs the tests against it and writes the verdict;
- `wire`: what passes between those two processes;
- `main`: the order of it all.
"""
