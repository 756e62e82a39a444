#!/usr/bin/env python3
"""PermissionRequest for Bash: read-only commands are approved without asking."""
import json
import sys

READ_ONLY = ("ls", "cat ", "git status", "git diff", "pwd")

data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
if command.startswith(READ_ONLY):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}))
