"""`agency loop`: collect → train → validate → canary → promote or roll back, journaled."""
