#!/usr/bin/env python3
"""PreToolUse for WebFetch: documentation sites are fine, anything else needs a human."""
import json
import sys
from urllib.parse import urlparse

ALLOWED = {"docs.python.org", "pkg.go.dev", "docs.temporal.io"}

data = json.load(sys.stdin)
host = urlparse(data.get("tool_input", {}).get("url", "")).hostname or ""
decision = "allow" if host in ALLOWED else "ask"
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "PreToolUse",
    "permissionDecision": decision,
    "permissionDecisionReason": f"fetching from {host} needs approval" if decision == "ask" else "documentation site",
}}))
