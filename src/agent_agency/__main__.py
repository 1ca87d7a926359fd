"""`python -m agent_agency`: the `agency` command, where its script is not on the PATH."""

from agent_agency.entry import main

main()
