package worker

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fenixrt/fenix/contextstore"
	"github.com/fenixrt/fenix/hooks"
	"github.com/fenixrt/fenix/workflows"
)

func TestLoadConfig(t *testing.T) {
	envOf := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "defaults", env: map[string]string{"FENIX_DATA_DIR": "/d"}, check: func(t *testing.T, c Config) {
			if c.TaskQueue != workflows.DefaultTaskQueue || c.Contexts.MaxBlobBytes != contextstore.DefaultMaxBlobBytes ||
				c.Contexts.Retention != DefaultContextRetention || c.Process.HTTPAddr != DefaultHTTPAddr || c.Process.LogFormat != "json" {
				t.Errorf("defaults = %+v", c)
			}
		}},
		{name: "environment", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_TASK_QUEUE": "q", "FENIX_WORKSPACE_BASES": "/a:/b",
			"FENIX_CONTEXT_RETENTION": "2h", "FENIX_HTTP_ADDR": "off"}, check: func(t *testing.T, c Config) {
			if c.TaskQueue != "q" || len(c.WorkspaceBases) != 2 || c.Contexts.Retention != 2*time.Hour || c.Process.HTTPAddr != "off" {
				t.Errorf("from env = %+v", c)
			}
		}},
		{name: "a flag wins over its variable", args: []string{"-task-queue", "flag-q"}, env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_TASK_QUEUE": "env-q"},
			check: func(t *testing.T, c Config) {
				if c.TaskQueue != "flag-q" {
					t.Errorf("TaskQueue = %q, want flag-q", c.TaskQueue)
				}
			}},
		{name: "inbox link follows the HTTP address", args: []string{"-http-addr", "0.0.0.0:9191"}, env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_INBOX_TOKENS": "a=0123456789abcdef"},
			check: func(t *testing.T, c Config) {
				if c.InboxURL != "http://localhost:9191/inbox/" || c.Process.InboxTokens != "a=0123456789abcdef" {
					t.Errorf("InboxURL = %q, tokens %q", c.InboxURL, c.Process.InboxTokens)
				}
			}},
		{name: "no inbox link without the HTTP server", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_HTTP_ADDR": "off"},
			check: func(t *testing.T, c Config) {
				if c.InboxURL != "" {
					t.Errorf("InboxURL = %q, want none", c.InboxURL)
				}
			}},
		{name: "explicit inbox link", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_INBOX_URL": "https://inbox.example/"},
			check: func(t *testing.T, c Config) {
				if c.InboxURL != "https://inbox.example/" {
					t.Errorf("InboxURL = %q", c.InboxURL)
				}
			}},
		{name: "session idle timeout", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_SESSION_IDLE_TIMEOUT": "5m"},
			check: func(t *testing.T, c Config) {
				if c.SessionIdleTimeout != 5*time.Minute {
					t.Errorf("SessionIdleTimeout = %s, want 5m", c.SessionIdleTimeout)
				}
			}},
		{name: "session idle timeout defaults to 30m", env: map[string]string{"FENIX_DATA_DIR": "/d"},
			check: func(t *testing.T, c Config) {
				if c.SessionIdleTimeout != workflows.DefaultSessionIdleTimeout {
					t.Errorf("SessionIdleTimeout = %s, want %s", c.SessionIdleTimeout, workflows.DefaultSessionIdleTimeout)
				}
			}},
		{name: "session idle timeout under 1s", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_SESSION_IDLE_TIMEOUT": "10ms"}, wantErr: "FENIX_SESSION_IDLE_TIMEOUT=10ms"},
		{name: "a blank task queue", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_TASK_QUEUE": " "}, wantErr: `FENIX_TASK_QUEUE) " "`},
		{name: "a padded task queue", args: []string{"-task-queue", "fenix "}, env: map[string]string{"FENIX_DATA_DIR": "/d"}, wantErr: `"fenix "`},
		{name: "FENIX_REDACT other than on or off", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_REDACT": "maybe"}, wantErr: `FENIX_REDACT="maybe"`},
		{name: "bad duration names its variable", env: map[string]string{"FENIX_CONTEXT_GC_INTERVAL": "soon"}, wantErr: `FENIX_CONTEXT_GC_INTERVAL="soon"`},
		{name: "bad size names its variable", env: map[string]string{"FENIX_CONTEXT_MAX_BYTES": "-1"}, wantErr: `FENIX_CONTEXT_MAX_BYTES="-1"`},
		{name: "hooks run eight at a time by default", env: map[string]string{"FENIX_DATA_DIR": "/d"},
			check: func(t *testing.T, c Config) {
				if c.HookConcurrency != hooks.DefaultConcurrency {
					t.Errorf("HookConcurrency = %d, want %d", c.HookConcurrency, hooks.DefaultConcurrency)
				}
			}},
		{name: "hooks in turn", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_HOOK_CONCURRENCY": "1"},
			check: func(t *testing.T, c Config) {
				if c.HookConcurrency != 1 {
					t.Errorf("HookConcurrency = %d, want 1", c.HookConcurrency)
				}
			}},
		{name: "hook concurrency flag", args: []string{"-hook-concurrency", "3"}, env: map[string]string{"FENIX_DATA_DIR": "/d"},
			check: func(t *testing.T, c Config) {
				if c.HookConcurrency != 3 {
					t.Errorf("HookConcurrency = %d, want 3", c.HookConcurrency)
				}
			}},
		{name: "hook concurrency 0 names its variable", env: map[string]string{"FENIX_HOOK_CONCURRENCY": "0"}, wantErr: `FENIX_HOOK_CONCURRENCY="0"`},
		{name: "hook concurrency not a number", env: map[string]string{"FENIX_HOOK_CONCURRENCY": "all"}, wantErr: `FENIX_HOOK_CONCURRENCY="all"`},
		{name: "hook concurrency flag 0", args: []string{"-hook-concurrency", "0"}, env: map[string]string{"FENIX_DATA_DIR": "/d"}, wantErr: "-hook-concurrency=0"},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: "flag provided but not defined"},
		{name: "codec key malformed", env: map[string]string{"FENIX_DATA_DIR": "/d", "FENIX_CODEC_KEY": "not base64!"}, wantErr: "FENIX_CODEC_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadConfig(tt.args, envOf(tt.env), io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			tt.check(t, c)
		})
	}
}

func TestValidateNamesTheSetting(t *testing.T) {
	if err := (Config{}).withDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "FENIX_DATA_DIR") {
		t.Fatalf("Validate without a data dir = %v, want it to name FENIX_DATA_DIR", err)
	}
}

func TestGRPCCompressionIsGzipOrNone(t *testing.T) {
	c := Config{DataDir: "/d"}.withDefaults()
	for _, v := range []string{"", "gzip", "none"} {
		c.Process.GRPCCompression = v
		if err := c.Validate(); err != nil {
			t.Errorf("FENIX_GRPC_COMPRESSION=%q: %v", v, err)
		}
	}
	c.Process.GRPCCompression = "zstd"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `FENIX_GRPC_COMPRESSION="zstd"`) {
		t.Errorf("Validate with zstd = %v, want it to name FENIX_GRPC_COMPRESSION", err)
	}
}
