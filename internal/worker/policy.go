package worker

import (
	"log/slog"

	"github.com/fenixrt/fenix/audit"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/redact"
)

// PolicyHooks builds the hook registry a worker with cfg runs — the same
// hooks in the same order, so the same policy fingerprint — for
// re-evaluating recorded verdicts (starter policy-diff). The audit hook
// writes through store; it handles no verdict event, so a store that
// refuses writes is fine there.
func PolicyHooks(cfg Config, store audit.Store) (*hooks.Registry, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Redactor == nil {
		cfg.Redactor = redact.Default()
	}
	loaded, err := buildHooks(cfg, store, nil, nil, nil, nil, nil, nil)
	return loaded.registry, err
}
