// Package claudecode is the Claude Code adapter of the hooks registry: it
// loads hook settings files in Claude Code's format (a project's
// .claude/settings.json and settings.local.json, a plugin's
// hooks/hooks.json, or a Fenix-native file) and runs their command and
// http handlers with Claude Code's protocol: the event as JSON on stdin or
// as the POST body, its output rules and exit codes, its matchers and `if`
// rules, and a transcript file for the hooks that read one. mcp_tool
// handlers call a configured MCP server (LoadOptions.MCP); prompt and
// agent handlers ask the worker's model (LoadOptions.Prompt and Agent)
// and read its {"ok", "reason"} as Claude Code does.
//
// Each file has a Dialect: "claude" hooks see Claude Code's tool names and
// argument shapes (Bash, tool_input.command, an absolute file_path),
// "fenix" hooks see Fenix's. LoadSources reads the files a worker was
// given, in order; Source.Registered describes one to
// hooks.Registry.AddSource:
//
//	sources, err := claudecode.LoadSources(paths, claudecode.LoadOptions{})
//	if err != nil {
//		return err
//	}
//	for _, src := range sources {
//		registry.AddSource(src.Registered())
//	}
//
// A file's "permissions" (allow, ask and deny rules, defaultMode) are
// merged across the loaded files by NewPermissions into a
// hooks.PermissionPolicy the registry consults after the PreToolUse hooks:
//
//	if p := claudecode.NewPermissions(sources); p != nil {
//		registry.SetPermissionPolicy(p)
//	}
//
// The package imports the registry core (package hooks); the core knows
// nothing of this package.
package claudecode
