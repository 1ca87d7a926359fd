"""An agency.yaml whose one agent is the `scripted` backend: tests that run `agency run` without a
model (the agent answers well, as `skills` says)."""

ONE_SCRIPTED_AGENT = """
agents:
  - name: sim-good
    backend: scripted
    skills: {"*": 0.9}
    capabilities: [text, code, math, extraction, classification, tools]
"""

TWO_SCRIPTED_AGENTS = """
agents:
  - name: sim-good
    backend: scripted
    skills: {"*": 0.9}
    capabilities: [text, code, math, extraction, classification, tools]
  - name: sim-poor
    backend: scripted
    skills: {"*": 0.3}
    capabilities: [text, code, math, extraction, classification, tools]
"""
