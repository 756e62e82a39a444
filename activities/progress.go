package activities

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/redact"
)

// SignalToolOutput is the signal a running tool sends to its own workflow
// with streamed output; the workflow turns it into a progress report.
const SignalToolOutput = "tool_output"

// Streaming budget: each signal is a history event and wakes the workflow
// for a workflow task, so output is coalesced to at most one signal a
// second, each carrying at most 8 KiB of text, and at most 120 signals per
// tool call. A tool that finishes within its first second sends none: its
// full output is in the tool result, and a signal would cost the call a
// workflow task.
const (
	progressInterval    = time.Second
	progressChunkBytes  = 8 << 10
	progressMaxSignals  = 120
	minHeartbeatEvery   = 200 * time.Millisecond
	maxHeartbeatEvery   = time.Second
	heartbeatFractionOf = 3
)

// ToolHeartbeat is ExecuteTool's heartbeat detail. When the worker dies,
// the workflow reads the last one from the timeout error, so the failure
// names the resource (command run, process run) the call created.
type ToolHeartbeat struct {
	StreamedBytes int64  `json:"streamed_bytes"`
	ResourceID    string `json:"resource_id,omitempty"`
}

// ToolOutputSignal is the payload of SignalToolOutput.
type ToolOutputSignal struct {
	Chunks []contract.ToolOutputChunk `json:"chunks"`
}

// progressSink coalesces a tool's output chunks into heartbeats (so the
// server knows the tool is alive and a retry could resume) and progress
// signals (so the kernel sees output while the tool runs).
type progressSink struct {
	ctx    context.Context
	callID string
	client client.Client
	wfID   string
	runID  string

	// redactor cleans streamed text: progress signals are history too.
	redactor *redact.Redactor

	mu       sync.Mutex
	pending  []contract.ToolOutputChunk
	lastSent time.Time
	signals  int
	streamed int64
	resource string
}

func newProgressSink(ctx context.Context, callID string) *progressSink {
	s := &progressSink{ctx: ctx, callID: callID, lastSent: time.Now()}
	if info, ok := currentActivity(ctx); ok && info.WorkflowExecution.ID != "" {
		s.wfID, s.runID = info.WorkflowExecution.ID, info.WorkflowExecution.RunID
		s.client = activityClient(ctx)
	}
	return s
}

// activityClient returns the worker's client, or nil where there is none
// (the SDK's test environment).
func activityClient(ctx context.Context) (c client.Client) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return activity.GetClient(ctx)
}

func (s *progressSink) emit(chunk contract.ToolOutputChunk) {
	if chunk.CallID == "" {
		chunk.CallID = s.callID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.streamed += int64(len(chunk.Text))
	if n := len(s.pending); n > 0 && s.pending[n-1].Stream == chunk.Stream {
		s.pending[n-1].Text += chunk.Text
	} else {
		s.pending = append(s.pending, chunk)
	}
	if time.Since(s.lastSent) >= progressInterval {
		s.sendLocked()
	}
}

// tick sends what is pending once progressInterval has passed since the
// last send, on the heartbeat's clock: emit sends only when more output
// arrives, so a command that prints a line and then works quietly (a
// build's banner, `echo started; sleep 30`) would hold its line until the
// next one, or the end, and a cancel in between would lose it.
func (s *progressSink) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.lastSent) >= progressInterval {
		s.sendLocked()
	}
}

// flush sends what is pending when the tool ends, if it streamed at all.
func (s *progressSink) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.signals == 0 {
		s.pending = nil
		return
	}
	s.sendLocked()
}

// reportResource records the resource a tool created, for heartbeats.
func (s *progressSink) reportResource(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resource = id
}

func (s *progressSink) heartbeat() ToolHeartbeat {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ToolHeartbeat{StreamedBytes: s.streamed, ResourceID: s.resource}
}

func (s *progressSink) sendLocked() {
	if len(s.pending) == 0 {
		return
	}
	chunks := s.pending
	s.pending = nil
	s.lastSent = time.Now()
	if s.client == nil || s.signals >= progressMaxSignals || s.ctx.Err() != nil {
		return
	}
	for i := range chunks {
		chunks[i].Text, _ = s.redactor.String(chunks[i].Text)
		if len(chunks[i].Text) > progressChunkBytes {
			tail := chunks[i].Text[len(chunks[i].Text)-progressChunkBytes:]
			chunks[i].Text = "[…earlier output omitted from progress; see the tool result]\n" + strings.ToValidUTF8(tail, "")
		}
	}
	s.signals++
	// A failed progress signal must not fail the tool: the output is also
	// in the result, so log and continue.
	if err := s.client.SignalWorkflow(s.ctx, s.wfID, s.runID, SignalToolOutput, ToolOutputSignal{Chunks: chunks}); err != nil {
		activity.GetLogger(s.ctx).Warn("tool output progress signal failed", "call_id", s.callID, "error", err)
	}
}

// startHeartbeat heartbeats a tool's progress while it runs.
func startHeartbeat(ctx context.Context, sink *progressSink) (stop func()) {
	return StartHeartbeats(ctx, func() any {
		sink.tick()
		return sink.heartbeat()
	})
}

// StartHeartbeats records heartbeats while an activity with a heartbeat
// timeout runs, with details from the given function (nil for none), and
// returns a func that stops them. Heartbeats are how a cancellation
// reaches a running activity and how the server learns its worker is
// alive; the SDK coalesces calls to its throttle interval. The first is
// one interval in, not at the start: an activity that ends sooner (most
// commands, every stage) costs no heartbeat, which the server records as
// a write to the execution, and a beat at the start would carry no
// progress and no resource yet. The server times the heartbeat from the
// activity's start, and the interval is at most a third of the timeout.
func StartHeartbeats(ctx context.Context, details func() any) (stop func()) {
	info, ok := currentActivity(ctx)
	if !ok || info.IsLocalActivity || info.HeartbeatTimeout <= 0 {
		return func() {}
	}
	every := min(max(info.HeartbeatTimeout/heartbeatFractionOf, minHeartbeatEvery), maxHeartbeatEvery)
	beat := func() {
		if details == nil {
			activity.RecordHeartbeat(ctx)
			return
		}
		activity.RecordHeartbeat(ctx, details())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				beat()
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
