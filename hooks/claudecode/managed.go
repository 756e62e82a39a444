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
// deny rules out. A disableAllHooks in another file turns off the hooks
// of every file but the managed settings, which it cannot disable.

// managedFlags are the keys of a settings file that only the managed
// settings apply.
type managedFlags struct {
	// disableAllHooks is the file's disableAllHooks, which any file may set.
	disableAllHooks bool
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
	for _, src := range sources {
		switch {
		case isManaged(src) && src.managed.disableAllHooks:
			managedOff = src.Path
		case isManaged(src) && src.managed.hooksOnly:
			hooksOnly = src.Path
		case !isManaged(src) && src.managed.disableAllHooks && othersOff == "":
			othersOff = src.Path
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
