package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/hooks"
)

// outcome is what an external hook produced: a command's exit status and
// output, or an HTTP response (status 2xx is exit 0).
type outcome struct {
	exitCode int
	stdout   []byte
	stderr   string
	// httpStatus is set for HTTP hooks; their plain-text bodies are errors,
	// not context, and they cannot block through a status code.
	httpStatus int
	// sessionEnv is what a SessionStart command hook wrote to
	// $CLAUDE_ENV_FILE, whatever its exit status (Claude Code sources the
	// file regardless); sessionEnvErr why the file is not applied.
	sessionEnv    string
	sessionEnvErr error
}

// hookJSON is Claude Code's hook JSON output.
type hookJSON struct {
	Continue       *bool  `json:"continue"`
	StopReason     string `json:"stopReason"`
	SuppressOutput *bool  `json:"suppressOutput"`
	SystemMessage  string `json:"systemMessage"`
	Decision       string `json:"decision"`
	Reason         string `json:"reason"`
	// AdditionalContext and UpdatedToolOutput at the top level are older
	// spellings some scripts still print.
	AdditionalContext  string          `json:"additionalContext"`
	UpdatedToolOutput  json.RawMessage `json:"updatedToolOutput"`
	HookSpecificOutput *hookSpecific   `json:"hookSpecificOutput"`
}

type hookSpecific struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             map[string]any  `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
	UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
	UpdatedMCPToolOutput     json.RawMessage `json:"updatedMCPToolOutput"`
	// Decision is PermissionRequest's answer.
	Decision *permissionBehavior `json:"decision"`
	// Retry is PermissionDenied's answer.
	Retry bool `json:"retry"`
	// Action and Content are Elicitation's and ElicitationResult's answer;
	// Content stays raw so that only those events read it.
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

type permissionBehavior struct {
	Behavior     string         `json:"behavior"`
	Message      string         `json:"message"`
	UpdatedInput map[string]any `json:"updatedInput"`
	Interrupt    bool           `json:"interrupt"`
}

// hookJSONFields are the top-level keys that make a JSON line hook output
// rather than incidental JSON a script printed.
var hookJSONFields = []string{"continue", "stopReason", "suppressOutput", "systemMessage", "decision", "reason",
	"additionalContext", "updatedToolOutput", "hookSpecificOutput", "terminalSequence"}

// verdict is what a hook's output said, independent of the event.
type verdict struct {
	// parsed is the JSON output; nil for plain text or no output.
	parsed *hookJSON
	// plainText is stdout that is not JSON (context on some events).
	plainText string
	// exit2 is a block by exit status 2; stderr is the fallback reason.
	exit2  bool
	stderr string
	// sessionEnv and sessionEnvErr are the outcome's, kept even when the
	// answer itself is an error.
	sessionEnv    string
	sessionEnvErr error
}

// interpret applies Claude Code's output rules (its hooks reference since
// v2.1.214): stdout is read as JSON when it starts with "{" and ends with
// "}", on every exit status; exit 2 blocks whatever the JSON says, with
// the JSON's own blocking reason when it gives one and stderr otherwise
// (also when the JSON does not parse); on any other status a valid JSON
// object alone decides, as on exit 0, and without one the hook's failure
// is a non-blocking error (the returned error). A status that reports a
// process killed by a signal never gets here: it fails closed
// (shellReportedKill).
func interpret(o outcome) (verdict, error) {
	v := verdict{stderr: strings.TrimSpace(o.stderr)}
	parsed, plain, parseErr := parseHookStdout(o.stdout)
	v.parsed, v.plainText = parsed, plain
	switch {
	case o.httpStatus != 0:
		if o.httpStatus < 200 || o.httpStatus > 299 {
			return verdict{}, fmt.Errorf("responded with HTTP status %d%s", o.httpStatus, suffix(string(o.stdout)))
		}
		if parseErr != nil {
			return verdict{}, parseErr
		}
		if plain != "" {
			return verdict{}, fmt.Errorf("responded with a body that is not a JSON object: %s", audit.Preview(plain, 200))
		}
		return v, nil
	case o.exitCode == 2:
		// Exit 2 blocks; its JSON is still read (the reason of its own
		// block among it), and one that does not parse leaves stderr.
		v.exit2 = true
		v.plainText = ""
		if parseErr != nil {
			v.parsed = nil
		}
		return v, nil
	case parseErr != nil:
		return verdict{}, parseErr
	case o.exitCode == 0, parsed != nil:
		return v, nil
	default:
		return verdict{}, fmt.Errorf("exited with status %d%s", o.exitCode, suffix(o.stderr))
	}
}

func suffix(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	return ": " + audit.Preview(text, 500)
}

// parseHookStdout splits stdout into hook JSON, plain text or a parse
// error, following Claude Code's rules for what counts as JSON.
func parseHookStdout(stdout []byte) (*hookJSON, string, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return nil, "", nil
	}
	if trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
		return nil, string(trimmed), nil
	}
	if lines := bytes.Split(trimmed, []byte("\n")); len(lines) > 1 {
		allJSON, anyField := true, false
		for _, line := range lines {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(bytes.TrimSpace(line), &m); err != nil {
				allJSON = false
				break
			}
			for _, f := range hookJSONFields {
				if _, ok := m[f]; ok {
					anyField = true
				}
			}
		}
		if allJSON && !anyField {
			return nil, string(trimmed), nil
		}
		if allJSON {
			return nil, "", errors.New("printed several JSON objects on stdout; hook output must be one JSON object")
		}
	}
	var out hookJSON
	if err := json.Unmarshal(trimmed, &out); err != nil {
		return nil, "", fmt.Errorf("printed invalid hook JSON on stdout: %w", err)
	}
	if err := out.validate(); err != nil {
		return nil, "", fmt.Errorf("printed hook JSON that fails validation: %w", err)
	}
	return &out, "", nil
}

func (o *hookJSON) validate() error {
	switch o.Decision {
	case "", "block", "approve":
	default:
		return fmt.Errorf("decision %q is not \"block\"", o.Decision)
	}
	if h := o.HookSpecificOutput; h != nil {
		switch h.PermissionDecision {
		case "", "allow", "deny", "ask", "defer":
		default:
			return fmt.Errorf("hookSpecificOutput.permissionDecision %q is not allow, deny, ask or defer", h.PermissionDecision)
		}
		if d := h.Decision; d != nil && d.Behavior != "allow" && d.Behavior != "deny" {
			return fmt.Errorf("hookSpecificOutput.decision.behavior %q is not allow or deny", d.Behavior)
		}
	}
	return nil
}

// halt is the request to end the turn ("continue": false).
func (v verdict) halt() *hooks.Halt {
	if v.parsed == nil || v.parsed.Continue == nil || *v.parsed.Continue {
		return nil
	}
	reason := v.parsed.StopReason
	if reason == "" {
		reason = "a hook asked to stop (continue: false)"
	}
	return &hooks.Halt{Reason: reason}
}

func (v verdict) hso() *hookSpecific {
	if v.parsed == nil || v.parsed.HookSpecificOutput == nil {
		return &hookSpecific{}
	}
	return v.parsed.HookSpecificOutput
}

// contexts are the additionalContext values the JSON gave.
func (v verdict) contexts() []string {
	var out []string
	if v.parsed != nil && v.parsed.AdditionalContext != "" {
		out = append(out, v.parsed.AdditionalContext)
	}
	if c := v.hso().AdditionalContext; c != "" {
		out = append(out, c)
	}
	return out
}

// topBlock reports the top-level decision "block" and its reason.
func (v verdict) topBlock() (bool, string) {
	if v.parsed == nil || v.parsed.Decision != "block" {
		return false, ""
	}
	return true, v.parsed.Reason
}

// blockReason picks a block's message: the JSON's reason for a JSON
// decision (exit 0), stderr for exit 2 (whose stdout is ignored).
func (v verdict) blockReason(jsonReason string) string {
	if jsonReason != "" {
		return jsonReason
	}
	return v.stderr
}

// updatedToolOutput is the replacement tool output, if any: a call of an
// MCP tool also takes updatedMCPToolOutput, which Claude Code reads for
// MCP tools only.
func (v verdict) updatedToolOutput(mcpTool bool) (any, bool, error) {
	var raw json.RawMessage
	if v.parsed != nil {
		raw = v.parsed.UpdatedToolOutput
	}
	h := v.hso()
	replacements := []json.RawMessage{h.UpdatedToolOutput}
	if mcpTool {
		replacements = append(replacements, h.UpdatedMCPToolOutput)
	}
	for _, r := range replacements {
		if len(r) > 0 {
			raw = r
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, false, fmt.Errorf("updatedToolOutput: %w", err)
	}
	return out, true, nil
}
