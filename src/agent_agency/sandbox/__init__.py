"""Running generated code in a subprocess: time and memory limits, no network, scratch files."""
