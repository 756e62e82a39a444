package observability

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	logger, err := NewLogger(&buf, "json", "warn")
	if err != nil {
		t.Fatalf("NewLogger: %v", err)
	}
	logger.Info("dropped")
	logger.Warn("kept", "task_queue", "fenix")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("want one JSON record, got %q: %v", buf.String(), err)
	}
	if rec["msg"] != "kept" || rec["task_queue"] != "fenix" {
		t.Errorf("record = %v, want msg=kept task_queue=fenix", rec)
	}

	buf.Reset()
	logger, err = NewLogger(&buf, "text", "DEBUG")
	if err != nil {
		t.Fatalf("NewLogger(text, DEBUG): %v", err)
	}
	logger.Debug("hello")
	if !strings.Contains(buf.String(), "level=DEBUG msg=hello") {
		t.Errorf("text output = %q, want a DEBUG record", buf.String())
	}
}

func TestNewLoggerErrors(t *testing.T) {
	tests := []struct {
		format, level, want string
	}{
		{"json", "verbose", `log level "verbose": use debug, info, warn or error`},
		{"yaml", "info", `log format "yaml": use json or text`},
	}
	for _, tt := range tests {
		_, err := NewLogger(&bytes.Buffer{}, tt.format, tt.level)
		if err == nil || err.Error() != tt.want {
			t.Errorf("NewLogger(%q, %q) error = %v, want %q", tt.format, tt.level, err, tt.want)
		}
	}
}
