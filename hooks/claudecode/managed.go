package claudecode

import (
	"path/filepath"
	"slices"
)

// Claude Code's managed settings (managed-settings.json, its
// policySettings) are the one file no other overrides. Three of its keys
// reach the other files: disableAllHooks turns every file's hooks off,
// allowManagedHooksOnly runs its hooks alone, and
// allowManagedPermissionRulesOnly keeps the other files' allow, ask and
// deny rules out. disableAllHooks is a setting as any other: the file of
// highest precedence that sets it decides (a project's local false over
// the user's true); true from another file than the managed settings
// turns off the hooks of every file but the managed settings, which it
// cannot disable.

// managedFlags are the keys of a settings file that only the managed
// settings apply.
type managedFlags struct {
	// disableAllHooks is the file's disableAllHooks, which any file may
	// set; nil where it does not.
	disableAllHooks *bool
	// hooksOnly and rulesOnly are allowManagedHooksOnly and
	// allowManagedPermissionRulesOnly.
	hooksOnly, rulesOnly bool
}

// isManaged is whether src is the managed settings file.
func isManaged(src *Source) bool { return filepath.Base(src.Path) == "managed-settings.json" }

// applyManagedSettings turns off the hooks the files' disableAllHooks and
// the managed settings' allowManagedHooksOnly keep from running, and
// warns on every file whose hooks or rules the managed settings keep out.
func applyManagedSettings(sources []*Source) {
	var managedOff, hooksOnly, rulesOnly, othersOff string
	// The disableAllHooks that holds: the file of highest precedence's.
	var decided *Source
	for _, src := range byPrecedence(sources) {
		if src.managed.disableAllHooks != nil {
			decided = src
		}
	}
	for _, src := range sources {
		if d := src.managed.disableAllHooks; d != nil && *d && src != decided {
			src.warn("%s: its disableAllHooks is overridden by %s, which sets it to %t", src.Path, decided.Path, *decided.managed.disableAllHooks)
		}
	}
	if decided != nil && *decided.managed.disableAllHooks {
		if isManaged(decided) {
			managedOff = decided.Path
		} else {
			othersOff = decided.Path
		}
	}
	for _, src := range sources {
		if isManaged(src) && src.managed.hooksOnly {
			hooksOnly = src.Path
		}
		if isManaged(src) && src.managed.rulesOnly {
			rulesOnly = src.Path
		}
	}
	for _, src := range sources {
		if len(src.Hooks) > 0 {
			switch {
			case managedOff != "":
				src.Hooks = nil
				src.warn("%s: none of its hooks run: disableAllHooks is set in the managed settings %s", src.Path, managedOff)
			case isManaged(src):
			case hooksOnly != "":
				src.Hooks = nil
				src.warn("%s: none of its hooks run: allowManagedHooksOnly is set in the managed settings %s", src.Path, hooksOnly)
			case othersOff != "":
				src.Hooks = nil
				src.warn("%s: none of its hooks run: disableAllHooks is set in %s (it leaves only the managed settings' hooks)", src.Path, othersOff)
			}
		}
		if rulesOnly != "" && !isManaged(src) && src.Permissions != nil && len(src.Permissions.rules) > 0 {
			src.warn("%s: its permission rules do not apply: allowManagedPermissionRulesOnly is set in the managed settings %s", src.Path, rulesOnly)
		}
	}
}

// managedRulesOnly is whether the managed settings among sources keep the
// other files' permission rules out (allowManagedPermissionRulesOnly).
func managedRulesOnly(sources []*Source) bool {
	return slices.ContainsFunc(sources, func(src *Source) bool { return isManaged(src) && src.managed.rulesOnly })
}
