package claudecode

import (
	"fmt"
	"strings"
)

// actedOnKeys are the top-level settings keys Fenix reads.
var actedOnKeys = map[string]bool{"hooks": true, "permissions": true, "disableAllHooks": true,
	"allowManagedHooksOnly": true, "allowManagedPermissionRulesOnly": true,
	"allowedHttpHookUrls": true, "sandbox": true, DialectKey: true, "$schema": true,
	"enableAllProjectMcpServers": true, "enabledMcpjsonServers": true, "disabledMcpjsonServers": true,
	"allowedMcpServers": true, "deniedMcpServers": true}

// ignoredSettingsKeys are Claude Code settings Fenix has nothing to apply
// to, with the reason the load warning gives.
var ignoredSettingsKeys = map[string]string{
	"statusLine":             "there is no status line",
	"enabledPlugins":         "plugins load from the hook sources the worker is given",
	"extraKnownMarketplaces": "plugins load from the hook sources the worker is given",
	"model":                  "the model comes from the assignment",
	"availableModels":        "the model comes from the assignment",
	"outputStyle":            "there is no terminal UI",
	"spinnerTipsEnabled":     "there is no terminal UI",
	"theme":                  "there is no terminal UI",
	"apiKeyHelper":           "Fenix does not use Claude Code's credentials",
	"forceLoginMethod":       "Fenix does not use Claude Code's credentials",
	"cleanupPeriodDays":      "transcripts belong to the worker",
	"includeCoAuthoredBy":    "Fenix makes no commits of its own",
	"attribution":            "Fenix makes no commits of its own",
	"automaticCodeReview":    "there is no code review step",
	"mcpServers":             "MCP servers are configured in .mcp.json or the worker's -mcp-config files",
}

// checkSettingsKeys warns once for every top-level key the file holds that
// Fenix does not act on, naming the file and the key.
func (src *Source) checkSettingsKeys(data []byte) error {
	fields, err := orderedObject(data)
	if err != nil {
		return fmt.Errorf("hook settings %s: not a JSON object: %w", src.Path, err)
	}
	for _, f := range fields {
		switch {
		case actedOnKeys[f.key]:
		case f.key == "description" && src.Kind == SourcePlugin:
		case f.key == "env":
			// Acted on: every hook and every exec_command and
			// process_exec get the files' env merged (CommandEnv), as
			// every process of a Claude Code session does.
		default:
			if why, ok := ignoredSettingsKeys[f.key]; ok {
				src.warn("%s: settings key %q is not acted on: %s", src.Path, f.key, why)
			} else {
				src.warn("%s: unknown settings key %q is ignored (Fenix acts on %s)", src.Path, f.key, strings.Join(sortedKeys(actedOnKeys)[1:], ", "))
			}
		}
	}
	return nil
}
