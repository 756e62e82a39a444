package claudecode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// chooseDialect applies the explicit key, then the file's location (a
// project's .claude/ or a plugin's hooks/ speaks Claude Code), then what
// the file names: Claude Code tools and handler fields, or Fenix tools and
// fields.
func chooseDialect(explicit string, kind SourceKind, groups []eventGroup) (d Dialect, reason string, assumed bool, err error) {
	switch Dialect(explicit) {
	case DialectClaude, DialectFenix:
		return Dialect(explicit), fmt.Sprintf("%s is %q", DialectKey, explicit), false, nil
	case "":
	default:
		return "", "", false, fmt.Errorf("%s %q is not \"claude\" or \"fenix\"", DialectKey, explicit)
	}
	switch kind {
	case SourceProject, SourceLocal:
		return DialectClaude, "it is a project's .claude settings file", false, nil
	case SourceUser:
		return DialectClaude, "it is the user's ~/.claude/settings.json", false, nil
	case SourcePlugin:
		return DialectClaude, "it is a plugin's hooks/hooks.json", false, nil
	}
	claude, fenix := dialectHints(groups)
	switch {
	case claude != "" && fenix == "":
		return DialectClaude, "it names " + claude, false, nil
	case fenix != "" && claude == "":
		return DialectFenix, "it names " + fenix, false, nil
	case claude != "":
		return DialectFenix, fmt.Sprintf("it names both %s and %s, so the dialect was assumed to be fenix", claude, fenix), true, nil
	}
	return DialectFenix, "nothing in it names a Claude Code or Fenix tool, so the dialect was assumed to be fenix", true, nil
}

var (
	claudeToolName = regexp.MustCompile(`\b(Bash|Read|Write|Edit|MultiEdit|Glob|Grep|WebFetch|WebSearch|Task|Agent|NotebookEdit|NotebookRead|TodoWrite|LS|BashOutput|KillShell|AskUserQuestion|ExitPlanMode|mcp__\w+)\b`)
	fenixToolName  = regexp.MustCompile(`\b(exec_command|process_\w+|workspace_\w+|web_fetch|web_search|spawn_subagent|memory_\w+|command_run_read|calculator)\b`)
)

// dialectHints names the first Claude Code and the first Fenix marker in
// the file.
func dialectHints(groups []eventGroup) (claude, fenix string) {
	note := func(dst *string, what string) {
		if *dst == "" {
			*dst = what
		}
	}
	for _, g := range groups {
		if _, known := claudeOnlyEvents[g.event]; known {
			note(&claude, fmt.Sprintf("Claude Code event %q", g.event))
		}
		switch g.event {
		case "StepComplete", "Error":
			note(&fenix, fmt.Sprintf("Fenix event %q", g.event))
		}
		if m := claudeToolName.FindString(g.matcher); m != "" {
			note(&claude, fmt.Sprintf("Claude Code tool %q", m))
		}
		if m := fenixToolName.FindString(g.matcher); m != "" {
			note(&fenix, fmt.Sprintf("Fenix tool %q", m))
		}
		for _, raw := range g.handlers {
			fields, err := orderedObject(raw)
			if err != nil {
				continue
			}
			for _, f := range fields {
				switch f.key {
				case "onFailure", "statusMessage", "async", "asyncRewake", "once", "args", "shell", "if", "allowedEnvVars":
					note(&claude, fmt.Sprintf("Claude Code handler field %q", f.key))
				case "fail_closed":
					note(&fenix, fmt.Sprintf("Fenix handler field %q", f.key))
				case "command":
					var cmd string
					_ = json.Unmarshal(f.value, &cmd)
					if strings.Contains(cmd, "CLAUDE_PROJECT_DIR") || strings.Contains(cmd, "CLAUDE_PLUGIN_ROOT") {
						note(&claude, "$CLAUDE_PROJECT_DIR or $CLAUDE_PLUGIN_ROOT")
					}
					if strings.Contains(cmd, "FENIX_HOOKS_DIR") {
						note(&fenix, "$FENIX_HOOKS_DIR")
					}
				}
			}
		}
	}
	return claude, fenix
}

func hasToolEvents(groups []eventGroup) bool {
	for _, g := range groups {
		switch g.event {
		case "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied", "PostToolBatch":
			return true
		}
	}
	return false
}
