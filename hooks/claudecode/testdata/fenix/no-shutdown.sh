#!/bin/sh
# Fenix-native guard: reads tool_input.command_line.
command_line=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"]["command_line"])')
case "$command_line" in
*shutdown*|*reboot*) echo "no-shutdown: $command_line would stop the host" >&2; exit 2 ;;
esac
exit 0
