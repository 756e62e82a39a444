package openai

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/fenixerr"
)

// An endpoint that sends an answer without end (or of gigabytes, a 200 or
// an error status) was read whole into the worker's memory until the
// request timeout: a fast local server fills gigabytes in that time and
// the worker is killed. What is read of a response is now bounded; the
// call fails at once with a non-retryable PayloadTooLargeError naming the
// provider and the limit.
func TestCompleteStopsReadingAnOversizedAnswer(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
		var written atomic.Int64
		s := newChatServer(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			chunk := []byte(strings.Repeat("a", 64<<10))
			_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`))
			// 64 MiB at most, so the test itself stays bounded without
			// the limit.
			for written.Load() < 64<<20 {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		})
		p := newTestProvider(t, s, func(c *Config) { c.RequestTimeout = 20 * time.Second })
		_, err := p.Complete(context.Background(), llm.Request{})
		if ok, _ := llm.IsRetryable(err); ok || !errors.Is(err, fenixerr.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "bytes") {
			t.Fatalf("status %d: error = %v, want a non-retryable PayloadTooLargeError", status, err)
		}
		if fe := fenixerr.As(err); fe.Code != "model_answer_too_large" {
			t.Fatalf("status %d: code %q", status, fe.Code)
		}
		// The server wrote what the limit and the sockets' buffers hold.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && written.Load() < maxResponseBytes {
			time.Sleep(10 * time.Millisecond)
		}
		s.CloseClientConnections()
		if n := written.Load(); n > maxResponseBytes+8<<20 {
			t.Fatalf("status %d: %d bytes were read, over the %d-byte limit", status, n, maxResponseBytes)
		}
	}
}
