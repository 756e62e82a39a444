#!/usr/bin/env python3
"""Stop: the agent may stop only once it says it verified its answer.

Reads the transcript like users' Stop hooks do, and respects the
stop_hook_active loop guard."""
import json
import sys

data = json.load(sys.stdin)
if data.get("stop_hook_active"):
    sys.exit(0)
with open(data["transcript_path"]) as transcript:
    lines = [json.loads(line) for line in transcript if line.strip()]
assistant_turns = sum(1 for line in lines if line.get("type") == "assistant")
message = data.get("last_assistant_message", "")
if "VERIFIED" not in message:
    print(json.dumps({
        "decision": "block",
        "reason": f"Check the answer once more and end it with VERIFIED (transcript has {assistant_turns} assistant messages).",
    }))
