package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fenixrt/fenix/hooks"
)

// One run of an external hook, and which of its failures block.

// exchange sends the event and interprets the answer. An error is a hook
// failure: it could not start, timed out, was cancelled, or answered with
// something that is neither a decision nor a block.
func (h *ExternalHook) exchange(ctx context.Context, s hooks.Session, in map[string]any) (verdict, error) {
	payload, err := json.Marshal(in)
	if err != nil {
		return verdict{}, fmt.Errorf("hook %q: encoding the %s event as JSON: %w", h.name, h.eventName, err)
	}
	if h.async {
		go h.runDetached(s, payload)
		return verdict{}, nil
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if _, ok := h.transport.(selfTimed); !ok {
		runCtx, cancel = context.WithTimeout(ctx, h.timeout)
	}
	defer cancel()
	o, err := h.transport.call(runCtx, h, s, payload)
	if err != nil {
		var kept keptFromAnswering
		switch {
		case ctx.Err() != nil:
			return verdict{}, fmt.Errorf("hook %q: %s %q was cancelled (%v)", h.name, h.transport.kind(), h.transport.describe(), ctx.Err())
		case errors.As(err, &kept):
			h.logger.Error("hook kept from answering: failing closed", "hook", h.name, "event", h.eventName, "settings", h.sourcePath, "error", err)
			return verdict{}, fmt.Errorf("hook %q: %s %q %w", h.name, h.transport.kind(), h.transport.describe(), err)
		case errors.As(err, new(*timeoutError)):
			return verdict{}, fmt.Errorf("hook %q: %s %q %w", h.name, h.transport.kind(), h.transport.describe(), err)
		case errors.Is(err, context.DeadlineExceeded) || runCtx.Err() != nil:
			return verdict{}, fmt.Errorf("hook %q: %s %q timed out after %s", h.name, h.transport.kind(), h.transport.describe(), h.timeout)
		}
		var notStarted *notStartedError
		if errors.As(err, &notStarted) {
			h.logger.Error("hook could not start", "hook", h.name, "event", h.eventName, "file", notStarted.File(),
				"settings", h.sourcePath, "fails_closed", h.failClosed, "error", err)
		}
		return verdict{}, fmt.Errorf("hook %q: %w", h.name, err)
	}
	v, err := interpret(o)
	v.sessionEnv, v.sessionEnvErr = o.sessionEnv, o.sessionEnvErr
	if err != nil {
		return v, fmt.Errorf("hook %q: %s %q %w", h.name, h.transport.kind(), h.transport.describe(), err)
	}
	return v, nil
}

// runDetached runs an async hook to completion on its own timeout; like
// Claude Code's, its output is not applied.
func (h *ExternalHook) runDetached(s hooks.Session, payload []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	_, _ = h.transport.call(ctx, h, s, payload)
}

// selfTimed is a transport that applies the hook's timeout itself.
type selfTimed interface{ timesItself() }

// failsClosed is whether a failure blocks: the hook's onFailure, or a
// failure something else caused (keptFromAnswering), which always does.
func (h *ExternalHook) failsClosed(err error) bool {
	var kept keptFromAnswering
	return h.failClosed || errors.As(err, &kept)
}

func (h *ExternalHook) failClosedReason(err error) string {
	return fmt.Sprintf("guard hook %q failed closed: %v", h.name, err)
}

// cannotBlock reports a block requested on an event Fenix cannot block, so
// the request shows in the trace instead of vanishing.
func (h *ExternalHook) cannotBlock(v verdict) error {
	blocked, reason := v.topBlock()
	if v.exit2 {
		blocked, reason = true, v.blockReason(reason)
		return fmt.Errorf("hook %q exited with status 2 on %s, which cannot be blocked: %s", h.name, h.eventName, reason)
	}
	if blocked {
		return fmt.Errorf("hook %q asked to block %s, which cannot be blocked: %s", h.name, h.eventName, reason)
	}
	return nil
}
