#!/usr/bin/env python3
"""PreToolUse rewrite: this project logs in UTC, so `date` runs as `date -u`."""
import json
import sys

data = json.load(sys.stdin)
tool_input = data.get("tool_input", {})
command = tool_input.get("command", "")
if command.startswith("date") and " -u" not in command:
    updated = dict(tool_input, command=command.replace("date", "date -u", 1))
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "dates are UTC in this project",
            "updatedInput": updated,
            "additionalContext": "Dates in this project are UTC.",
        }
    }))
