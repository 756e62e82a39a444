package prodserver

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRenderConfigLikeDockerize: an unset variable takes the default, a set
// one (even empty) wins, and the template's other functions work, as the
// image's dockerize renders them.
func TestRenderConfigLikeDockerize(t *testing.T) {
	tpl := filepath.Join(t.TempDir(), "config_template.yaml")
	body := `level: {{ default .Env.LOG_LEVEL "info" }}
shards: {{ default .Env.NUM_HISTORY_SHARDS "4" }}
{{- $db := default .Env.DB "cassandra" | lower }}
db: {{ $db }}
{{- if .Env.AUTHENTICATORS }}
authenticators:{{ range split .Env.AUTHENTICATORS "," }}
  - {{ trim . }}{{ end }}
{{- end }}
`
	if err := os.WriteFile(tpl, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := RenderConfig(tpl, map[string]string{"NUM_HISTORY_SHARDS": "", "DB": "POSTGRES12", "AUTHENTICATORS": "a, b"})
	if err != nil {
		t.Fatal(err)
	}
	want := "level: info\nshards: \ndb: postgres12\nauthenticators:\n  - a\n  - b\n"
	if string(got) != want {
		t.Errorf("rendered:\n%s\nwant:\n%s", got, want)
	}
	if _, err := RenderConfig(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Error("a missing template must be an error")
	}
}
