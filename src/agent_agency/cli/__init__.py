"""The `agency` command line: one module per command group."""
