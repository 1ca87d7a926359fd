"""Running generated code in a subprocess: time and memory limits, no network, a throw-away directory."""
