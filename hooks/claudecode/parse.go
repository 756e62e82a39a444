package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// settingsFile is the part of a settings file Fenix reads.
type settingsFile struct {
	Hooks           json.RawMessage `json:"hooks"`
	Dialect         string          `json:"fenixDialect"`
	DisableAllHooks *bool           `json:"disableAllHooks"`
	// AllowManagedHooksOnly and AllowManagedPermissionRulesOnly apply in
	// the managed settings only (applyManagedSettings).
	AllowManagedHooksOnly           bool              `json:"allowManagedHooksOnly"`
	AllowManagedPermissionRulesOnly bool              `json:"allowManagedPermissionRulesOnly"`
	AllowedHTTPHookURLs             []string          `json:"allowedHttpHookUrls"`
	Env                             map[string]string `json:"env"`
	Permissions                     json.RawMessage   `json:"permissions"`
	Sandbox                         json.RawMessage   `json:"sandbox"`
}

// ParseSource parses settings-file JSON in Claude Code's format:
//
//	{"hooks": {"PreToolUse": [{"matcher": "Bash|Write",
//	  "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py", "timeout": 10, "onFailure": "block"}]}]}}
//
// Events, matcher groups and handler fields Fenix does not use load with a
// warning in Source.Warnings, so a real project's settings file works as
// it is; malformed structure, an unparseable matcher, a command handler
// without a command and invalid timeouts are errors that name the file and
// the entry at fault. Hooks come back in file order.
func ParseSource(data []byte, path string, kind SourceKind, paths HookPaths, opts LoadOptions) (*Source, error) {
	src := &Source{Path: path, Kind: kind, Data: data, Paths: paths, mcp: opts.MCP, prompt: opts.Prompt, agent: opts.Agent}
	var file settingsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("hook settings %s: not a JSON object: %w", path, err)
	}
	groups, err := parseEvents(file.Hooks, path)
	if err != nil {
		return nil, err
	}
	var assumed bool
	src.Dialect, src.DialectReason, assumed, err = chooseDialect(file.Dialect, kind, groups)
	if err != nil {
		return nil, fmt.Errorf("hook settings %s: %w", path, err)
	}
	if assumed && hasToolEvents(groups) {
		src.Warnings = append(src.Warnings, fmt.Sprintf("%s: %s; set %q to \"claude\" or \"fenix\" to say which tool names and argument shapes its scripts expect", path, src.DialectReason, DialectKey))
	}
	src.protectSource()
	if err := src.checkSettingsKeys(data); err != nil {
		return nil, err
	}
	if err := src.parseMCPServerSettings(data); err != nil {
		return nil, err
	}
	if len(file.Permissions) > 0 && string(file.Permissions) != "null" {
		if err := src.parsePermissions(file.Permissions); err != nil {
			return nil, err
		}
	}
	if len(file.Sandbox) > 0 && string(file.Sandbox) != "null" {
		if err := src.parseSandbox(file.Sandbox); err != nil {
			return nil, err
		}
	}
	// Commands get the env whether or not the file's hooks run.
	src.env = file.Env
	src.managed = managedFlags{disableAllHooks: file.DisableAllHooks, hooksOnly: file.AllowManagedHooksOnly, rulesOnly: file.AllowManagedPermissionRulesOnly}
	if !isManaged(src) && (file.AllowManagedHooksOnly || file.AllowManagedPermissionRulesOnly) {
		src.warn("%s: allowManagedHooksOnly and allowManagedPermissionRulesOnly apply in managed-settings.json only; ignored here", path)
	}
	policy := opts.HTTPPolicy
	if len(file.AllowedHTTPHookURLs) > 0 {
		policy.AllowedURLs = append(append([]string(nil), policy.AllowedURLs...), file.AllowedHTTPHookURLs...)
	}
	pins := &pinner{src: src, store: opts.Scripts, accepted: opts.accepted}
	for _, g := range groups {
		if err := src.addGroup(g, policy, opts, pins); err != nil {
			return nil, err
		}
	}
	src.Scripts = pins.scripts()
	src.pinned, src.absentScripts = pins.trees, pins.absent
	return src, nil
}

// eventGroup is one matcher group of one event, undecoded handlers.
type eventGroup struct {
	event    string
	index    int
	where    string
	matcher  string
	handlers []json.RawMessage
	extra    []string
}

func parseEvents(raw json.RawMessage, path string) ([]eventGroup, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	events, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("hook settings %s: \"hooks\" must be an object of event name to matcher groups: %w", path, err)
	}
	var out []eventGroup
	for _, ev := range events {
		where := fmt.Sprintf("%s: hooks.%s", path, ev.key)
		var groups []json.RawMessage
		if err := json.Unmarshal(ev.value, &groups); err != nil {
			return nil, fmt.Errorf("%s: must be a list of {\"matcher\", \"hooks\"} groups: %w", where, err)
		}
		for gi, rawGroup := range groups {
			g := eventGroup{event: ev.key, index: gi, where: fmt.Sprintf("%s[%d]", where, gi)}
			fields, err := orderedObject(rawGroup)
			if err != nil {
				return nil, fmt.Errorf("%s: must be an object with \"matcher\" and \"hooks\": %w", g.where, err)
			}
			for _, f := range fields {
				switch f.key {
				case "matcher":
					if string(f.value) != "null" {
						if err := json.Unmarshal(f.value, &g.matcher); err != nil {
							return nil, fmt.Errorf("%s.matcher: must be a string: %w", g.where, err)
						}
					}
				case "hooks":
					if err := json.Unmarshal(f.value, &g.handlers); err != nil {
						return nil, fmt.Errorf("%s.hooks: must be a list of handlers: %w", g.where, err)
					}
				default:
					g.extra = append(g.extra, f.key)
				}
			}
			out = append(out, g)
		}
	}
	return out, nil
}

// handlerEntry is one hook handler; fields of every Claude Code handler
// type are decoded so unknown-key warnings name only true unknowns.
type handlerEntry struct {
	Type           string            `json:"type"`
	Command        string            `json:"command"`
	Args           *[]string         `json:"args"`
	Shell          string            `json:"shell"`
	Timeout        *float64          `json:"timeout"`
	FailClosed     bool              `json:"fail_closed"`
	OnFailure      string            `json:"onFailure"`
	Name           string            `json:"name"`
	If             string            `json:"if"`
	Async          bool              `json:"async"`
	AsyncRewake    bool              `json:"asyncRewake"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers"`
	AllowedEnvVars []string          `json:"allowedEnvVars"`
	Server         string            `json:"server"`
	Tool           string            `json:"tool"`
	Input          map[string]any    `json:"input"`
	Prompt         string            `json:"prompt"`
	Model          string            `json:"model"`
}

// handlerKeys are the handler fields Fenix reads; ignoredHandlerKeys are
// Claude Code fields that have no effect here (no interactive UI, no
// skill-scoped hooks).
var (
	handlerKeys = map[string]bool{"type": true, "command": true, "args": true, "shell": true, "timeout": true,
		"fail_closed": true, "onFailure": true, "name": true, "if": true, "async": true, "asyncRewake": true,
		"url": true, "headers": true, "allowedEnvVars": true, "server": true, "tool": true, "input": true,
		"prompt": true, "model": true}
	ignoredHandlerKeys = map[string]string{
		"statusMessage": "there is no spinner to show it on",
		"once":          "Claude Code honours it only in skill frontmatter",
	}
)

// claudeOnlyEvents are Claude Code events Fenix does not fire.
var claudeOnlyEvents = map[string]string{
	"Setup": "there is no CLI --init", "TeammateIdle": "there are no agent teams",
	"TaskCreated": "there are no agent teams", "TaskCompleted": "there are no agent teams",
	"CwdChanged":  "sessions do not change directory",
	"FileChanged": "there is no file watcher", "DirectoryAdded": "there are no added directories",
	"InstructionsLoaded": "prompt sections come from the assignment", "UserPromptExpansion": "there are no slash commands",
	"WorktreeCreate": "there are no worktrees", "WorktreeRemove": "there are no worktrees",
	"PreModelSwitch": "the model is fixed per turn", "PostModelSwitch": "the model is fixed per turn",
	"MessageDisplay": "there is no screen",
}

func (src *Source) warn(format string, args ...any) {
	src.Warnings = append(src.Warnings, fmt.Sprintf(format, args...))
}

func (src *Source) addGroup(g eventGroup, policy HTTPPolicy, opts LoadOptions, pins *pinner) error {
	if _, ok := eventSpecFor(src.Dialect, g.event); !ok {
		if src.skippedEvents[g.event] {
			return nil // one warning per event and file
		}
		if src.skippedEvents == nil {
			src.skippedEvents = map[string]bool{}
		}
		src.skippedEvents[g.event] = true
		g.where = fmt.Sprintf("%s: hooks.%s", src.Path, g.event)
		if why, known := claudeOnlyEvents[g.event]; known {
			src.warn("%s: Claude Code event %q is not fired by Fenix (%s); its hooks are skipped", g.where, g.event, why)
		} else {
			src.warn("%s: unknown event %q is skipped; Fenix fires %s", g.where, g.event, strings.Join(SettingsEventNames(), ", "))
		}
		return nil
	}
	for _, k := range g.extra {
		src.warn("%s: unknown matcher-group field %q is ignored", g.where, k)
	}
	if _, err := CompileMatcher(g.matcher); err != nil {
		return fmt.Errorf("%s.matcher: %w", g.where, err)
	}
	if len(g.handlers) == 0 {
		src.warn("%s: \"hooks\" is empty: the group runs nothing", g.where)
	}
	for hi, raw := range g.handlers {
		where := fmt.Sprintf("%s.hooks[%d]", g.where, hi)
		h, err := src.buildHandler(g, where, raw, policy, opts, pins)
		if err != nil {
			return err
		}
		if h != nil {
			src.Hooks = append(src.Hooks, h)
		}
	}
	return nil
}

func (src *Source) buildHandler(g eventGroup, where string, raw json.RawMessage, policy HTTPPolicy, opts LoadOptions, pins *pinner) (*ExternalHook, error) {
	fields, err := orderedObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: a handler must be a JSON object: %w", where, err)
	}
	var entry handlerEntry
	if err := json.Unmarshal(raw, &entry); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	for _, f := range fields {
		if handlerKeys[f.key] {
			continue
		}
		if why, ok := ignoredHandlerKeys[f.key]; ok {
			src.warn("%s: %q is ignored: %s", where, f.key, why)
		} else {
			src.warn("%s: unknown handler field %q is ignored", where, f.key)
		}
	}
	failClosed := entry.FailClosed
	switch entry.OnFailure {
	case "", "continue":
	case "block":
		failClosed = true
	default:
		src.warn("%s: onFailure %q is not \"block\" or \"continue\"; the hook fails open", where, entry.OnFailure)
	}
	switch entry.Type {
	case "command", "http":
	case "mcp_tool":
		if src.mcp == nil {
			if failClosed {
				return nil, fmt.Errorf("%s: an mcp_tool handler needs MCP servers, this worker has none, and it is set to fail closed: configure the server in .mcp.json or -mcp-config", where)
			}
			src.warn("%s: mcp_tool handler skipped: this worker has no MCP servers configured (.mcp.json or -mcp-config)", where)
			return nil, nil
		}
	case "prompt":
		if src.prompt == nil || !promptEvents[g.event] {
			why := "this worker has no model to evaluate it (FENIX_MODEL)"
			if src.prompt != nil {
				why = "prompt handlers run only on " + strings.Join(sortedKeys(promptEvents), ", ")
			}
			if failClosed {
				return nil, fmt.Errorf("%s: a prompt handler cannot run: %s, and it is set to fail closed, so skipping it would let everything through", where, why)
			}
			src.warn("%s: prompt handler skipped: %s", where, why)
			return nil, nil
		}
	case "agent":
		if src.agent == nil || !promptEvents[g.event] {
			why := "nothing here can evaluate it: it needs a worker's model (FENIX_MODEL) and workspace tools"
			if src.agent != nil {
				why = "agent handlers run only on " + strings.Join(sortedKeys(promptEvents), ", ")
			}
			if failClosed {
				return nil, fmt.Errorf("%s: an agent handler cannot run: %s, and it is set to fail closed, so skipping it would let everything through", where, why)
			}
			src.warn("%s: agent handler skipped: %s", where, why)
			return nil, nil
		}
	default:
		src.warn("%s: handler type %q is unknown; skipped (Fenix runs \"command\", \"http\", \"mcp_tool\", \"prompt\" and \"agent\")", where, entry.Type)
		return nil, nil
	}
	cfg := ExternalHookConfig{Event: g.event, Matcher: g.matcher, Dialect: src.Dialect, FailClosed: failClosed,
		Name: entry.Name, Paths: src.Paths, Source: src.Path, Async: entry.Async || entry.AsyncRewake, Env: src.env, Logger: opts.Logger, Launcher: opts.Launcher, WorkerEnv: opts.HookEnv}
	if entry.AsyncRewake {
		src.warn("%s: asyncRewake runs like async: there is no idle session to wake", where)
	}
	if entry.Timeout != nil {
		if *entry.Timeout <= 0 {
			return nil, fmt.Errorf("%s: timeout must be a positive number of seconds, got %v", where, *entry.Timeout)
		}
		cfg.Timeout = time.Duration(*entry.Timeout * float64(time.Second))
	}
	if entry.If != "" {
		if _, err := parseIfRule(entry.If, src.Paths.ProjectDir); err != nil {
			src.warn("%s: %v; the hook runs without that filter", where, err)
		} else {
			cfg.If = entry.If
		}
	}
	var h *ExternalHook
	if entry.Type == "mcp_tool" {
		h, err = NewMCPToolHook(MCPToolHookConfig{ExternalHookConfig: cfg, Server: entry.Server, Tool: entry.Tool, Input: entry.Input, Caller: src.mcp})
	} else if entry.Type == "prompt" {
		h, err = NewPromptHook(PromptHookConfig{ExternalHookConfig: cfg, Prompt: entry.Prompt, Model: entry.Model, Evaluator: src.prompt})
	} else if entry.Type == "agent" {
		h, err = NewPromptHook(PromptHookConfig{ExternalHookConfig: cfg, Prompt: entry.Prompt, Model: entry.Model, Agent: src.agent})
	} else if entry.Type == "command" {
		if strings.TrimSpace(entry.Command) == "" {
			return nil, fmt.Errorf("%s: command is missing or empty", where)
		}
		var args []string
		if entry.Args != nil {
			args = append([]string{}, (*entry.Args)...)
		}
		if entry.Shell == "powershell" {
			if failClosed {
				return nil, fmt.Errorf("%s: shell \"powershell\" is not available and the hook fails closed", where)
			}
			src.warn("%s: shell \"powershell\" is not available; skipped", where)
			return nil, nil
		}
		command, pinnedArgs, pinErr := pins.command(entry.Command, args, entry.Args != nil)
		if pinErr != nil {
			return nil, fmt.Errorf("%s: %w", where, pinErr)
		}
		shell := entry.Shell
		if shell == "" && src.Dialect == DialectClaude && bashAvailable() {
			// Claude Code runs a command hook's shell form in bash (its
			// "shell" defaults to it); under dash a guard's [[ … ]] is a
			// command not found, its if false, and the call goes on.
			shell = "bash"
		}
		h, err = NewCommandHook(CommandHookConfig{ExternalHookConfig: cfg, Command: command, Args: pinnedArgs, Shell: shell,
			Written: entry.Command, WrittenArgs: args, Absent: slices.Clone(pins.absent), Scripts: opts.Scripts, WorkspacePins: opts.WorkspacePins})
		if err == nil {
			src.protectCommand(entry.Command, args, entry.Args != nil)
			src.warnShims(where, entry.Command, args, entry.Args != nil)
		}
	} else {
		if strings.TrimSpace(entry.URL) == "" {
			return nil, fmt.Errorf("%s: url is missing or empty", where)
		}
		h, err = NewHTTPHook(HTTPHookConfig{ExternalHookConfig: cfg, URL: entry.URL, Headers: entry.Headers,
			AllowedEnvVars: entry.AllowedEnvVars, Policy: policy})
		var notAllowed *URLNotAllowedError
		if errors.As(err, &notAllowed) {
			if failClosed {
				return nil, fmt.Errorf("%s: %w, and the hook fails closed, so skipping it would let everything through", where, notAllowed)
			}
			src.warn("%s: %v; the hook is skipped", where, notAllowed)
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return h, nil
}

type keyValue struct {
	key   string
	value json.RawMessage
}

// orderedObject decodes a JSON object keeping its key order, so hooks of
// the same file always load, and report errors, in the same order.
func orderedObject(raw json.RawMessage) ([]keyValue, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("got %v", tok)
	}
	var out []keyValue
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key is %v", tok)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("value of %q: %w", key, err)
		}
		out = append(out, keyValue{key: key, value: value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

// bashAvailable is whether the worker finds bash on its PATH, where
// Claude-dialect command hooks run in it.
var bashAvailable = sync.OnceValue(func() bool {
	_, err := exec.LookPath("bash")
	return err == nil
})
