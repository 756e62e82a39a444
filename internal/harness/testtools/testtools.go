// Package testtools holds tools used only by tests and the history
// recorder: deterministic stand-ins for long-running work.
package testtools

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/fenixrt/fenix/tools"
)

// SleepArgs are test_sleep's arguments.
type SleepArgs struct {
	Seconds int `json:"seconds" jsonschema:"minimum=1,maximum=600"`
	// FinishDespiteCancel sleeps on through a cancel and completes, as a
	// tool that ran to its end before the cancel reached it does.
	FinishDespiteCancel bool `json:"finish_despite_cancel,omitempty"`
}

// SleepResult is test_sleep's result.
type SleepResult struct {
	Slept int `json:"slept"`
}

// Sleep is a long, heartbeating tool that honours cancellation, for cancel
// tests that must not depend on the timing of real tools.
func Sleep() tools.Definition {
	return tools.Define(tools.Spec{Name: "test_sleep", Timeout: 10 * time.Minute, Heartbeat: 2 * time.Second},
		func(ctx context.Context, _ *tools.Env, a SleepArgs) (SleepResult, error) {
			if a.FinishDespiteCancel {
				time.Sleep(time.Duration(a.Seconds) * time.Second)
				return SleepResult{Slept: a.Seconds}, nil
			}
			select {
			case <-ctx.Done():
				return SleepResult{}, ctx.Err()
			case <-time.After(time.Duration(a.Seconds) * time.Second):
				return SleepResult{Slept: a.Seconds}, nil
			}
		}, func(_ SleepArgs, r SleepResult) tools.Projection {
			return tools.Projection{Content: fmt.Sprintf("Slept %d seconds.", r.Slept)}
		})
}

// WithBuiltins returns the built-in registry plus extra definitions.
func WithBuiltins(extra ...tools.Definition) (*tools.Registry, error) {
	builtin := tools.Builtin()
	defs := make([]tools.Definition, 0, len(builtin.Names())+len(extra))
	for _, n := range builtin.Names() {
		d, _ := builtin.Lookup(n)
		defs = append(defs, d)
	}
	return tools.NewRegistry(append(defs, extra...)...)
}

// PicturePNG is the image test_picture returns: a 1x1 PNG.
var PicturePNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")

// PictureResult is test_picture's result.
type PictureResult struct {
	Ref   string `json:"ref"`
	Bytes int    `json:"bytes"`
}

// Picture returns an image as browser_screenshot does: its bytes in the
// context store, an attachment naming them.
func Picture() tools.Definition {
	return tools.Define(tools.Spec{Name: "test_picture", ReadOnly: true, Timeout: time.Minute},
		func(ctx context.Context, env *tools.Env, _ struct{}) (PictureResult, error) {
			ref, err := env.Blobs.Put(ctx, PicturePNG)
			if err != nil {
				return PictureResult{}, err
			}
			return PictureResult{Ref: ref, Bytes: len(PicturePNG)}, nil
		}, func(_ struct{}, r PictureResult) tools.Projection {
			return tools.Projection{Content: fmt.Sprintf("[image image/png, %d bytes, stored as %s]", r.Bytes, r.Ref),
				Metadata: tools.Attach(nil, tools.Attachment{Type: tools.AttachmentImage, MIMEType: "image/png", Ref: r.Ref, Bytes: r.Bytes})}
		})
}
