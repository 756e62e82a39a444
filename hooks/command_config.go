package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// DefaultCommandTimeout bounds a command hook without its own timeout.
const DefaultCommandTimeout = 60 * time.Second

// commandEvents maps the event names of a hook settings file (Claude Code's
// spelling) to Fenix events. SessionEnd and Stop both mean "the session
// ended"; Error and StepComplete are Fenix extensions, Claude Code has no
// such events.
var commandEvents = map[string]Event{
	"SessionStart":       EventSessionStart,
	"PreToolUse":         EventPreToolUse,
	"PostToolUse":        EventPostToolUse,
	"PostToolUseFailure": EventPostToolUseFailure,
	"PermissionRequest":  EventPermissionRequest,
	"StepComplete":       EventStepComplete,
	"SessionEnd":         EventSessionStop,
	"Stop":               EventSessionStop,
	"SubagentStart":      EventSubagentStart,
	"SubagentStop":       EventSubagentStop,
	"PreCompact":         EventPreCompact,
	"PostCompact":        EventPostCompact,
	"Error":              EventError,
}

// CommandEventNames lists the event names a hook settings file may use.
func CommandEventNames() []string {
	names := make([]string, 0, len(commandEvents))
	for name := range commandEvents {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// CommandEventFor maps a settings-file event name to a Fenix event.
func CommandEventFor(name string) (Event, bool) {
	ev, ok := commandEvents[name]
	return ev, ok
}

// CommandHookConfig describes one command hook.
type CommandHookConfig struct {
	// Event is the settings-file event name, e.g. "PreToolUse".
	Event string
	// Matcher selects tool names (or, per event, the source, stop reason,
	// subagent profile, compaction trigger or error type): "" or "*"
	// matches all, otherwise it is a regular expression anchored at both
	// ends, so "exec_command" and "Edit|Write" match exactly.
	Matcher string
	// Command runs through sh -c.
	Command string
	// Timeout defaults to DefaultCommandTimeout.
	Timeout time.Duration
	// FailClosed makes a crash, timeout or invalid JSON block the tool call
	// (or deny the permission) instead of allowing it.
	FailClosed bool
	// Name identifies the hook; defaults to the event and command.
	Name string
	// Dir is where the command runs when the event has no workspace; the
	// settings file's directory when loaded from a file.
	Dir string
}

// LoadCommandHooks reads a hook settings file in Claude Code's format:
//
//	{"hooks": {"PreToolUse": [{"matcher": "exec_command|workspace_.*",
//	  "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 10, "fail_closed": true}]}]}}
//
// timeout is in seconds (fractions allowed). Other top-level keys of the
// file are ignored; inside "hooks" everything is checked, and an error
// names the file and the entry at fault. Hooks come back in file order.
func LoadCommandHooks(path string) ([]AgentHook, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading hook settings: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("hook settings %s: %w", path, err)
	}
	return ParseCommandHooks(data, path, filepath.Dir(abs))
}

// ParseCommandHooks parses settings-file JSON; source names it in errors and
// dir is the commands' fallback working directory.
func ParseCommandHooks(data []byte, source, dir string) ([]AgentHook, error) {
	var file struct {
		Hooks json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("hook settings %s: not a JSON object: %w", source, err)
	}
	if len(file.Hooks) == 0 || string(file.Hooks) == "null" {
		return nil, nil
	}
	events, err := orderedObject(file.Hooks)
	if err != nil {
		return nil, fmt.Errorf("hook settings %s: \"hooks\" must be an object of event name to matcher groups: %w", source, err)
	}
	var out []AgentHook
	for _, ev := range events {
		where := fmt.Sprintf("%s: hooks.%s", source, ev.key)
		if _, ok := commandEvents[ev.key]; !ok {
			return nil, fmt.Errorf("%s: unknown event %q; Fenix fires %s", where, ev.key, strings.Join(CommandEventNames(), ", "))
		}
		var groups []json.RawMessage
		if err := json.Unmarshal(ev.value, &groups); err != nil {
			return nil, fmt.Errorf("%s: must be a list of {\"matcher\", \"hooks\"} groups: %w", where, err)
		}
		for gi, rawGroup := range groups {
			groupWhere := fmt.Sprintf("%s[%d]", where, gi)
			var group struct {
				Matcher string            `json:"matcher"`
				Hooks   []json.RawMessage `json:"hooks"`
			}
			if err := decodeStrict(rawGroup, &group); err != nil {
				return nil, fmt.Errorf("%s: %w", groupWhere, err)
			}
			if _, err := compileMatcher(group.Matcher); err != nil {
				return nil, fmt.Errorf("%s.matcher: %w", groupWhere, err)
			}
			if len(group.Hooks) == 0 {
				return nil, fmt.Errorf("%s: \"hooks\" is empty: list at least one {\"type\": \"command\", \"command\": ...}", groupWhere)
			}
			for hi, rawHook := range group.Hooks {
				hookWhere := fmt.Sprintf("%s.hooks[%d]", groupWhere, hi)
				var entry struct {
					Type       string   `json:"type"`
					Command    string   `json:"command"`
					Timeout    *float64 `json:"timeout"`
					FailClosed bool     `json:"fail_closed"`
					Name       string   `json:"name"`
				}
				if err := decodeStrict(rawHook, &entry); err != nil {
					return nil, fmt.Errorf("%s: %w", hookWhere, err)
				}
				if entry.Type != "command" {
					return nil, fmt.Errorf("%s: type %q is not supported: Fenix runs only {\"type\": \"command\"} hooks", hookWhere, entry.Type)
				}
				if strings.TrimSpace(entry.Command) == "" {
					return nil, fmt.Errorf("%s: command is missing or empty", hookWhere)
				}
				cfg := CommandHookConfig{
					Event:      ev.key,
					Matcher:    group.Matcher,
					Command:    entry.Command,
					FailClosed: entry.FailClosed,
					Name:       entry.Name,
					Dir:        dir,
				}
				if entry.Timeout != nil {
					if *entry.Timeout <= 0 {
						return nil, fmt.Errorf("%s: timeout must be a positive number of seconds, got %v", hookWhere, *entry.Timeout)
					}
					cfg.Timeout = time.Duration(*entry.Timeout * float64(time.Second))
				}
				h, err := NewCommandHook(cfg)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", hookWhere, err)
				}
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// compileMatcher returns nil for a match-all matcher.
func compileMatcher(m string) (*regexp.Regexp, error) {
	m = strings.TrimSpace(m)
	if m == "" || m == "*" {
		return nil, nil
	}
	re, err := regexp.Compile("^(?:" + m + ")$")
	if err != nil {
		return nil, fmt.Errorf("matcher %q is not a valid regular expression: %w", m, err)
	}
	return re, nil
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
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
	return out, nil
}
