#!/bin/sh
# Example PreToolUse command hook (deploy/hooks/hooks.json) for exec_command
# and process_exec. Claude Code's hook protocol: the event arrives as JSON
# on stdin; exit 0 allows the call, exit 2 blocks it with stderr as the
# reason. The image has no jq, so this matches the raw JSON text; a real
# policy should parse tool_input properly.
event=$(cat)
case $event in
*'rm -rf /"'* | *'rm -rf / '* | *'rm -rf /*'* | *'rm -fr /"'* | *'rm -fr / '* | *mkfs.* | *'of=/dev/sd'* | *':(){'*)
	echo "blocked by the example guard in deploy/hooks/guard.sh: destructive command" >&2
	exit 2
	;;
esac
exit 0
