package providers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/providers"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name         string
		vars         map[string]string
		wantOpenAI   bool
		wantScripted bool
		wantDefault  string
	}{
		{"nothing", nil, false, false, ""},
		{"api key", map[string]string{"OPENAI_API_KEY": "sk"}, true, false, ""},
		{"local server without key", map[string]string{"FENIX_OPENAI_BASE_URL": "http://localhost:11434/v1", "FENIX_MODEL": "llama3.1:8b"}, true, false, "llama3.1:8b"},
		{"script file", map[string]string{"FENIX_SCRIPT_FILE": "../scripted/testdata/demo.json", "FENIX_MODEL": "scripted:main"}, false, true, "scripted:main"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := providers.FromEnv(env(tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			if (r.OpenAI != nil) != tt.wantOpenAI || (r.Scripted != nil) != tt.wantScripted || r.DefaultModel != tt.wantDefault {
				t.Fatalf("router = openai %v scripted %v default %q; want %v %v %q",
					r.OpenAI != nil, r.Scripted != nil, r.DefaultModel, tt.wantOpenAI, tt.wantScripted, tt.wantDefault)
			}
		})
	}
}

func TestFromEnvServesScriptedDefaultModel(t *testing.T) {
	r, err := providers.FromEnv(env(map[string]string{"FENIX_SCRIPT_FILE": "../scripted/testdata/demo.json", "FENIX_MODEL": "scripted:main"}))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Complete(context.Background(), llm.Request{})
	if err != nil || resp.Provider != "scripted" || len(resp.Message.ToolCalls) != 1 {
		t.Fatalf("Complete = %+v, %v; want the main script's first turn", resp, err)
	}
	_, err = r.Complete(context.Background(), llm.Request{Model: "gpt-4o"})
	if err == nil || !strings.Contains(err.Error(), "FENIX_OPENAI_API_KEY") {
		t.Fatalf("unconfigured OpenAI error = %v", err)
	}
}

func TestFromEnvRejectsBadSettings(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"FENIX_SCRIPT_FILE": "no/such/file.json"}, "FENIX_SCRIPT_FILE"},
		{map[string]string{"FENIX_OPENAI_BASE_URL": "localhost:8000"}, "FENIX_OPENAI_BASE_URL"},
		{map[string]string{"OPENAI_API_KEY": "sk", "FENIX_OPENAI_TIMEOUT": "later"}, "FENIX_OPENAI_TIMEOUT"},
	}
	for _, tt := range tests {
		if _, err := providers.FromEnv(env(tt.vars)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FromEnv(%v) error = %v, want one naming %s", tt.vars, err, tt.want)
		}
	}
}
