package claudecode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/hooks"
)

// Permission behaviours, in the order Claude Code evaluates them.
const (
	behaviorDeny  = "deny"
	behaviorAsk   = "ask"
	behaviorAllow = "allow"
)

// Permission modes a settings file's permissions.defaultMode may name.
var permissionModes = map[string]string{
	"default":           "a call no rule matches runs (the assignment's allowed_tool_names is the standing approval Claude Code's prompt would give)",
	"acceptEdits":       "as default: Fenix asks for nothing no rule asks for",
	"auto":              "as default: there is no classifier",
	"bypassPermissions": "as default: deny and ask rules still apply, as in Claude Code",
	"plan":              "every tool not known to only read is denied (MCP tools read only with the server's readOnlyHint); reading tools run",
	"dontAsk":           "a call no allow rule (or PreToolUse hook) approves is denied",
}

// FilePermissions is the "permissions" object of one settings file.
type FilePermissions struct {
	Allow, Ask, Deny      []string
	DefaultMode           string
	AdditionalDirectories []string
	rules                 []permissionRule
}

// permissionRule is one allow, ask or deny rule with the file it came
// from.
type permissionRule struct {
	behavior string
	rule     *ifRule
	source   string
}

// parsePermissions reads a settings file's "permissions". Malformed
// structure and rules are errors naming the file and the rule; what Fenix
// does not act on is a warning.
func (src *Source) parsePermissions(raw json.RawMessage) error {
	where := src.Path + ": permissions"
	if src.Kind == SourcePlugin {
		src.warn("%s: a plugin's hooks/hooks.json cannot set permissions (Claude Code reads them from settings files); ignored", where)
		return nil
	}
	fields, err := orderedObject(raw)
	if err != nil {
		return fmt.Errorf("%s: must be an object with allow, ask, deny, defaultMode, additionalDirectories: %w", where, err)
	}
	p := &FilePermissions{}
	for _, f := range fields {
		key := where + "." + f.key
		switch f.key {
		case behaviorAllow, behaviorAsk, behaviorDeny:
			var list []string
			if err := json.Unmarshal(f.value, &list); err != nil {
				return fmt.Errorf("%s: must be a list of rule strings such as \"Bash(git push:*)\" or \"Read(./.env)\": %w", key, err)
			}
			for i, text := range list {
				r, err := src.parsePermissionRule(text, fmt.Sprintf("%s[%d]", key, i), f.key)
				if err != nil {
					return err
				}
				p.rules = append(p.rules, permissionRule{behavior: f.key, rule: r, source: src.Path})
			}
			switch f.key {
			case behaviorAllow:
				p.Allow = list
			case behaviorAsk:
				p.Ask = list
			default:
				p.Deny = list
			}
		case "defaultMode":
			if err := json.Unmarshal(f.value, &p.DefaultMode); err != nil {
				return fmt.Errorf("%s: must be a string: %w", key, err)
			}
			if _, ok := permissionModes[p.DefaultMode]; !ok {
				src.warn("%s: %q is not a Claude Code permission mode (%s); the file sets no mode", key, p.DefaultMode, strings.Join(sortedKeys(permissionModes), ", "))
				p.DefaultMode = ""
			}
		case "additionalDirectories":
			if err := json.Unmarshal(f.value, &p.AdditionalDirectories); err != nil {
				return fmt.Errorf("%s: must be a list of directories: %w", key, err)
			}
			if len(p.AdditionalDirectories) > 0 {
				src.warn("%s: not acted on: Fenix confines tools to the workspace root, so %s stay out of reach", key, strings.Join(p.AdditionalDirectories, ", "))
			}
		case "disableBypassPermissionsMode", "disableAutoMode":
			src.warn("%s: not acted on: the kernel, not the agent, chooses a session's permission mode", key)
		default:
			src.warn("%s: unknown permissions key is ignored", key)
		}
	}
	src.Permissions = p
	return nil
}

// parsePermissionRule parses one rule; a rule naming a tool Fenix does not
// have loads with a warning, since it can never match.
func (src *Source) parsePermissionRule(text, where, behavior string) (*ifRule, error) {
	if strings.Count(text, "(") != strings.Count(text, ")") {
		return nil, fmt.Errorf("%s: rule %q has unbalanced parentheses", where, text)
	}
	r, err := parseIfRule(text, src.Paths.ProjectDir)
	if err != nil {
		return nil, fmt.Errorf("%s: rule %q is not Tool or Tool(specifier), e.g. Bash(git push:*), Read(./.env), WebFetch(domain:example.com), mcp__server__tool", where, text)
	}
	switch {
	case strings.HasPrefix(r.tool, "mcp__"), len(FenixToolsFor(r.tool)) > 0, fenixToolName.MatchString(r.tool), r.tool == "*":
	default:
		src.warn("%s: rule %q: Fenix has no tool of that name and aliases no Claude Code tool to it; it never matches", where, text)
		return r, nil
	}
	if r.content != "" && r.content != "*" && !specifierKnown(r.tool) {
		what := "it never matches"
		if behavior != behaviorAllow {
			what = "it applies to every call of the tool"
		}
		src.warn("%s: rule %q: Fenix cannot evaluate a specifier for %s; %s", where, text, r.tool, what)
	}
	return r, nil
}

// specifierKnown says whether Fenix evaluates Tool(specifier) for the tool.
func specifierKnown(tool string) bool {
	switch tool {
	case "Bash", "Read", "Edit", "Write", "MultiEdit", "Glob", "Grep", "WebFetch", "Agent", "Task",
		"exec_command", "process_exec", "workspace_read", "workspace_write", "workspace_edit", "workspace_list",
		"workspace_search", "web_fetch", "spawn_subagent":
		return true
	}
	return false
}

// Permissions is the permission policy of the settings files a worker
// loaded, merged as Claude Code merges them: the allow, ask and deny lists
// of every file count; defaultMode comes from the file of highest
// precedence (managed-settings.json, then settings.local.json, then a
// project's settings.json, then any other file; among equals the one
// loaded last).
type Permissions struct {
	rules      []permissionRule
	mode       string
	modeSource string
	// autoAllowSource names the file whose sandbox approves sandboxed
	// commands under dontAsk (autoAllowBashIfSandboxed), "" for none;
	// sandboxed says whether the host applies the sandbox right now.
	autoAllowSource string
	sandboxed       func() bool
}

var (
	_ hooks.PermissionPolicy = (*Permissions)(nil)
	_ hooks.PathFilter       = (*Permissions)(nil)
)

// NewPermissions merges the sources' permissions; nil when none sets a
// rule or a mode.
func NewPermissions(sources []*Source) *Permissions {
	p := &Permissions{}
	rank := 0
	rulesOnly := managedRulesOnly(sources)
	for _, src := range sources {
		if src.Permissions == nil {
			continue
		}
		if !rulesOnly || isManaged(src) {
			p.rules = append(p.rules, src.Permissions.rules...)
		}
		if m := src.Permissions.DefaultMode; m != "" && settingsRank(src) >= rank {
			p.mode, p.modeSource, rank = m, src.Path, settingsRank(src)
		}
	}
	for _, src := range sources {
		if sb := src.Sandbox; sb != nil && sb.Enabled && sb.AutoAllowBash && p.autoAllowSource == "" {
			p.autoAllowSource = src.Path
		}
	}
	if len(p.rules) == 0 && p.mode == "" {
		return nil
	}
	return p
}

// SessionModes is the policy of a worker whose settings files set no
// permissions: it applies only a session's permission_mode, which the
// kernel names per assignment (plan mode's reads only, dontAsk's
// denials). It has no path rules (no hooks.PathFilter, so tools judge no
// open against it) and an empty fingerprint: it adds nothing to a policy
// of none.
func SessionModes() hooks.PermissionPolicy { return sessionModes{&Permissions{}} }

type sessionModes struct{ p *Permissions }

func (s sessionModes) Name() string { return s.p.Name() }
func (s sessionModes) Evaluate(ev hooks.PreToolUseEvent, hookAllowed bool) hooks.PolicyVerdict {
	return s.p.Evaluate(ev, hookAllowed)
}
func (s sessionModes) Fingerprint() string { return s.p.Fingerprint() }
func (s sessionModes) RefusesAsks(ev hooks.PreToolUseEvent) (string, bool) {
	return s.p.RefusesAsks(ev)
}

// RefusesAsks: permission mode dontAsk refuses what a PreToolUse hook
// asks about, as Claude Code turns every prompt of a dontAsk session
// into a denial.
func (p *Permissions) RefusesAsks(ev hooks.PreToolUseEvent) (string, bool) {
	mode, modeSource := p.mode, p.modeSource
	if ev.PermissionMode != "" && ev.PermissionMode != hooks.PermissionModeDefault {
		mode, modeSource = ev.PermissionMode, "the session's permission_mode"
	}
	if mode != "dontAsk" {
		return "", false
	}
	return fmt.Sprintf("permission mode dontAsk (%s) denies what would ask", modeSource), true
}

// ActsInMode: only a mode other than the default has something to apply.
func (s sessionModes) ActsInMode(mode string) bool {
	return mode != "" && mode != hooks.PermissionModeDefault
}

// settingsMode is the defaultMode the sources set (the most specific
// file's, as NewPermissions takes it), "" for none.
func settingsMode(sources []*Source) string {
	if p := NewPermissions(sources); p != nil {
		return p.mode
	}
	return ""
}

// UseSandbox tells the policy whether commands run sandboxed right now
// (the host's confinement), which autoAllowBashIfSandboxed needs: a
// sandbox that could not be applied approves nothing.
func (p *Permissions) UseSandbox(sandboxed func() bool) { p.sandboxed = sandboxed }

// Name labels the policy's decisions in the trace.
func (p *Permissions) Name() string { return "permissions" }

// Mode is the effective defaultMode ("" when no file sets one).
func (p *Permissions) Mode() string { return p.mode }

// UseSettingsMode gives the hooks of sources the effective defaultMode as
// the permission_mode of their input when the session names none, as
// Claude Code's hooks see the mode its settings started the session in.
func UseSettingsMode(sources []*Source, mode string) {
	for _, src := range sources {
		for _, h := range src.Hooks {
			if eh, ok := h.(*ExternalHook); ok {
				eh.settingsMode = mode
			}
		}
	}
}

// Fingerprint lists the mode and every rule in load order, without the
// files' paths: the same rules deployed elsewhere are the same policy.
func (p *Permissions) Fingerprint() string {
	if p.empty() {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mode=%q", p.mode)
	if p.autoAllowSource != "" {
		b.WriteString(";autoAllowBashIfSandboxed")
	}
	for _, r := range p.rules {
		fmt.Fprintf(&b, ";%s=%q", r.behavior, r.rule.text)
	}
	return b.String()
}

// Evaluate applies Claude Code's order: the first deny rule that matches
// denies (one Fenix cannot judge the command line against asks instead);
// else the first ask rule asks; else (in plan mode) a tool not known to
// only read (ev.ReadOnly) is denied; else the first allow rule allows; else
// dontAsk denies what no hook allowed, and every other mode leaves the
// call to the rest of the pipeline. A session's permission_mode other than
// "default" overrides the files' defaultMode.
func (p *Permissions) Evaluate(ev hooks.PreToolUseEvent, hookAllowed bool) hooks.PolicyVerdict {
	if p.empty() && (ev.PermissionMode == "" || ev.PermissionMode == hooks.PermissionModeDefault) {
		return hooks.PolicyVerdict{} // nothing to apply, on every call of a worker without rules
	}
	call := describeCall(ev.ToolName, ev.ToolInput)
	c := &judgedCall{tool: ev.ToolName, args: ev.ToolInput, root: ev.WorkspaceRoot}
	var unsure *permissionRule
	for _, r := range p.rules {
		if r.behavior != behaviorDeny {
			continue
		}
		matched, uncertain := r.matches(c)
		if matched {
			return r.verdict(call)
		}
		if uncertain && unsure == nil {
			unsure = &r
		}
	}
	mode, modeSource := p.mode, p.modeSource
	if ev.PermissionMode != "" && ev.PermissionMode != hooks.PermissionModeDefault {
		mode, modeSource = ev.PermissionMode, "the session's permission_mode"
	}
	// dontAsk denies what would ask, an ask rule's calls included.
	askOrDeny := func(v hooks.PolicyVerdict) hooks.PolicyVerdict {
		if mode == "dontAsk" {
			v.Decision = hooks.KindDeny
			v.Reason = fmt.Sprintf("%s is refused: %s, and permission mode dontAsk (%s) denies what would ask", call, v.Reason, modeSource)
		}
		return v
	}
	if unsure != nil {
		return askOrDeny(hooks.PolicyVerdict{Decision: hooks.KindPermissionRequired, Rule: unsure.rule.text, Source: unsure.source,
			Reason: fmt.Sprintf("%s may fall under deny rule %q in %s (%s); approval is asked", call, unsure.rule.text, unsure.source, c.unknown())})
	}
	for _, r := range p.rules {
		if r.behavior != behaviorAsk {
			continue
		}
		if matched, uncertain := r.matches(c); matched || uncertain {
			return askOrDeny(r.verdict(call))
		}
	}
	if mode == "plan" && !ev.ReadOnly {
		return hooks.PolicyVerdict{Decision: hooks.KindDeny, Rule: "defaultMode plan", Source: modeSource,
			Reason: fmt.Sprintf("%s is refused: permission mode plan (%s) lets the agent read and plan, not change anything", call, modeSource)}
	}
	if used := p.allowedBy(c); len(used) > 0 {
		v := used[0].verdict(call)
		for _, r := range used[1:] {
			v.Rule += ", " + r.rule.text
			v.Reason += fmt.Sprintf(", %q in %s", r.rule.text, r.source)
		}
		return v
	}
	if mode == "dontAsk" && !hookAllowed && p.autoAllows(ev.ToolName) {
		return hooks.PolicyVerdict{Decision: hooks.KindAllow, Rule: "sandbox.autoAllowBashIfSandboxed", Source: p.autoAllowSource,
			Reason: fmt.Sprintf("%s runs in the sandbox that %s turns on, whose autoAllowBashIfSandboxed approves it under dontAsk", call, p.autoAllowSource)}
	}
	if mode == "dontAsk" && !hookAllowed && (readsFiles(ev.ToolName) || c.isShell() && c.readOnlyLine()) {
		// Claude Code asks for neither a read in the working directory (the
		// only place a workspace tool reaches) nor a read-only command, so
		// dontAsk, which denies only what would ask, runs them.
		return hooks.PolicyVerdict{}
	}
	if mode == "dontAsk" && !hookAllowed {
		why := ""
		if beyond := c.beyondWords(); beyond != "" {
			why = " (" + beyond + ", so no allow rule approves it)"
		} else if cd := p.unapprovedCd(c); cd != "" {
			why = fmt.Sprintf(" (its cwd makes it run after %q, which no allow rule approves)", cd)
		}
		return hooks.PolicyVerdict{Decision: hooks.KindDeny, Rule: "defaultMode dontAsk", Source: modeSource,
			Reason: fmt.Sprintf("%s is refused: permission mode dontAsk (%s) denies what no allow rule approves%s", call, modeSource, why)}
	}
	return hooks.PolicyVerdict{}
}

// empty reports whether the files set no rule, no mode and no sandbox
// auto-allow: only a session's mode can apply.
func (p *Permissions) empty() bool {
	return len(p.rules) == 0 && p.mode == "" && p.autoAllowSource == ""
}

// readsFiles reports whether tool is one of Read's, Glob's or Grep's
// counterparts.
func readsFiles(tool string) bool {
	return tool == "workspace_read" || tool == "workspace_list" || tool == "workspace_search"
}

// autoAllows reports whether autoAllowBashIfSandboxed approves a call of
// tool: one of Bash's counterparts, while the host applies the sandbox.
// Without a host to ask (policy-diff) the sandbox is taken as applied,
// as it is on a host that can.
func (p *Permissions) autoAllows(tool string) bool {
	if p.autoAllowSource == "" || (p.sandboxed != nil && !p.sandboxed()) {
		return false
	}
	return slices.Contains(FenixToolsFor("Bash"), tool)
}

func (r permissionRule) verdict(call string) hooks.PolicyVerdict {
	v := hooks.PolicyVerdict{Rule: r.rule.text, Source: r.source}
	switch r.behavior {
	case behaviorDeny:
		v.Decision = hooks.KindDeny
		v.Reason = fmt.Sprintf("%s is denied by permission rule %q in %s", call, r.rule.text, r.source)
	case behaviorAsk:
		v.Decision = hooks.KindPermissionRequired
		v.Reason = fmt.Sprintf("permission rule %q in %s asks to approve %s", r.rule.text, r.source, call)
	default:
		v.Decision = hooks.KindAllow
		v.Reason = fmt.Sprintf("%s is allowed by permission rule %q in %s", call, r.rule.text, r.source)
	}
	return v
}

// describeCall names a call for a reason: the tool and what it acts on.
func describeCall(tool string, args map[string]any) string {
	for _, key := range []string{"command_line", "path", "url", "task"} {
		if s := str(args, key); s != "" {
			return fmt.Sprintf("%s %q", tool, audit.Preview(s, 200))
		}
	}
	return tool
}

// ReadDenied reports whether a deny rule covers a workspace_read of rel,
// judged as Evaluate judges one (the path and the file it resolves to;
// one that cannot be resolved counts as covered), so workspace_list and
// workspace_search leave out what a read would be refused, and a read
// is refused at the open when its symlinks changed since the review.
func (p *Permissions) ReadDenied(root, rel string, resolve func(string) (string, error)) bool {
	return p.pathDenied("workspace_read", root, rel, resolve)
}

// WriteDenied is ReadDenied for a write of rel, judged as a
// workspace_write (Edit and Write rules).
func (p *Permissions) WriteDenied(root, rel string, resolve func(string) (string, error)) bool {
	return p.pathDenied("workspace_write", root, rel, resolve)
}

func (p *Permissions) pathDenied(tool, root, rel string, resolve func(string) (string, error)) bool {
	c := &judgedCall{tool: tool, args: map[string]any{"path": rel}, root: root, resolve: resolve}
	for _, r := range p.rules {
		if r.behavior != behaviorDeny {
			continue
		}
		if matched, uncertain := r.matches(c); matched || uncertain {
			return true
		}
	}
	return false
}
