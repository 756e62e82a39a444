package skills

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/fenixerr"
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     Manifest
		wantBody string
		wantErr  string
	}{
		{"minimal", "---\nname: deploy\ndescription: Ship it.\n---\nBody\n",
			Manifest{Name: "deploy", Description: "Ship it."}, "Body\n", ""},
		{"extra keys become metadata", "---\nname: deploy\ndescription: Ship it.\nversion: 2\ntags: [ops]\nowner: {team: infra, 1: one}\n---\n",
			Manifest{Name: "deploy", Description: "Ship it.", Metadata: map[string]any{"version": 2, "tags": []any{"ops"}, "owner": map[string]any{"team": "infra", "1": "one"}}}, "", ""},
		{"CRLF and BOM", "\ufeff---\r\nname: deploy\r\ndescription: Ship it.\r\n---\r\nBody", Manifest{Name: "deploy", Description: "Ship it."}, "Body", ""},
		{"dots close the block", "---\nname: a\ndescription: d\n...\nBody", Manifest{Name: "a", Description: "d"}, "Body", ""},
		{"no front matter", "# deploy\n", Manifest{}, "", "has no front matter"},
		{"unclosed front matter", "---\nname: deploy\n", Manifest{}, "", "has no front matter"},
		{"bad yaml", "---\nname: [\n---\n", Manifest{}, "", "not valid YAML"},
		{"missing name", "---\ndescription: d\n---\n", Manifest{}, "", `needs a string "name"`},
		{"numeric name", "---\nname: 42\ndescription: d\n---\n", Manifest{}, "", `needs a string "name"`},
		{"name outside grammar", "---\nname: ../evil\ndescription: d\n---\n", Manifest{}, "", `name "../evil" is not a valid skill name`},
		{"name ending in dash", "---\nname: deploy-\ndescription: d\n---\n", Manifest{}, "", "not a valid skill name"},
		{"missing description", "---\nname: deploy\n---\n", Manifest{}, "", `skill "deploy" needs a non-empty string "description"`},
		{"blank description", "---\nname: deploy\ndescription: '  '\n---\n", Manifest{}, "", "non-empty"},
		{"long description", "---\nname: deploy\ndescription: " + strings.Repeat("x", MaxDescriptionLength+1) + "\n---\n", Manifest{}, "", "at most 1024"},
		{"not utf-8", "---\nname: deploy\ndescription: \xff\n---\n", Manifest{}, "", "not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body, err := ParseManifest([]byte(tt.in), "deploy/SKILL.md")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, fenixerr.ErrValidation) {
					t.Fatalf("err = %v, want a ValidationError containing %q", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "deploy/SKILL.md") {
					t.Fatalf("err = %v, want it to name the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) || body != tt.wantBody {
				t.Fatalf("got %#v body %q, want %#v body %q", got, body, tt.want, tt.wantBody)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a": true, "deploy": true, "Deploy_v2": true, "web-search": true, "a1": true,
		"": false, "1a": false, "-a": false, "a-": false, "a_": false, "a b": false, "a.b": false, "ü": false,
		strings.Repeat("a", MaxNameLength): true, strings.Repeat("a", MaxNameLength+1): false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}
