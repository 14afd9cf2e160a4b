"""Workflow texts that several test folders run through the CLI."""

# One wait, then a step that only runs once the wait was answered.
GATE_FLOW = """\
name: gate
jobs:
  approve:
    steps:
      - name: approval
        wait_for_signal:
          timeout: 3600
          schema:
            type: object
            required: [approved]
            properties: {approved: {type: boolean}}
  after:
    depends_on: [approve]
    steps:
      - name: done
        log: "approved"
"""
