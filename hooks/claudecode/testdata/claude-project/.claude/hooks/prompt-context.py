#!/usr/bin/env python3
"""UserPromptSubmit: no deploys from chat; otherwise remind the model of the conventions."""
import json
import sys

data = json.load(sys.stdin)
prompt = data.get("prompt", "")
if "deploy" in prompt.lower():
    print(json.dumps({"decision": "block", "reason": "Deploys go through the release pipeline, not the agent."}))
    sys.exit(0)
print(json.dumps({"hookSpecificOutput": {
    "hookEventName": "UserPromptSubmit",
    "additionalContext": "Convention: answers in this project end with the word VERIFIED once checked.",
}}))
