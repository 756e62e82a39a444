package skills

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/fenixrt/fenix/fenixerr"
)

// ManifestFile is the file that makes a directory a skill.
const ManifestFile = "SKILL.md"

// Limits on a manifest.
const (
	MaxNameLength        = 64
	MaxDescriptionLength = 1024
	MaxManifestBytes     = 256 << 10
)

// namePattern is the skill name grammar: a letter, then letters, digits,
// '-' or '_', not ending in '-' or '_'. References ($name) use the same
// grammar, so every installable name can be referenced.
var namePattern = regexp.MustCompile(`^[A-Za-z](?:[A-Za-z0-9_-]*[A-Za-z0-9])?$`)

// ValidName reports whether name follows the skill name grammar.
func ValidName(name string) bool {
	return len(name) <= MaxNameLength && namePattern.MatchString(name)
}

// Manifest is the front matter of SKILL.md.
type Manifest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Metadata holds the other front matter keys, JSON-compatible.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ParseManifest reads SKILL.md: a YAML front matter block between two
// "---" lines, with a string name following the name grammar and a
// non-empty description, then the Markdown body. where names the file in
// errors.
func ParseManifest(content []byte, where string) (Manifest, string, error) {
	if len(content) > MaxManifestBytes {
		return Manifest{}, "", fenixerr.PayloadTooLarge("%s is %d bytes; a SKILL.md may be at most %d bytes", where, len(content), MaxManifestBytes)
	}
	if !utf8.Valid(content) {
		return Manifest{}, "", fenixerr.Validation("%s is not valid UTF-8 text", where)
	}
	content = bytes.TrimPrefix(content, []byte("\ufeff"))
	front, body, ok := splitFrontMatter(string(content))
	if !ok {
		return Manifest{}, "", fenixerr.Validation("%s has no front matter: start it with a line \"---\", then \"name: ...\" and \"description: ...\", then \"---\"", where)
	}
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(front), &raw); err != nil {
		return Manifest{}, "", fenixerr.Validation("%s front matter is not valid YAML: %v", where, err).WithCause(err)
	}
	m := Manifest{}
	name, ok := raw["name"].(string)
	if !ok || name == "" {
		return Manifest{}, "", fenixerr.Validation("%s front matter needs a string \"name\"", where)
	}
	if !ValidName(name) {
		return Manifest{}, "", fenixerr.Validation("%s front matter name %q is not a valid skill name: use a letter, then letters, digits, '-' or '_' (at most %d characters, not ending in '-' or '_')", where, name, MaxNameLength)
	}
	desc, ok := raw["description"].(string)
	desc = strings.TrimSpace(desc)
	if !ok || desc == "" {
		return Manifest{}, "", fenixerr.Validation("%s front matter for skill %q needs a non-empty string \"description\"", where, name)
	}
	if len(desc) > MaxDescriptionLength {
		return Manifest{}, "", fenixerr.Validation("%s description of skill %q is %d bytes; at most %d fit the Active Skills list", where, name, len(desc), MaxDescriptionLength)
	}
	m.Name, m.Description = name, desc
	for k, v := range raw {
		if k == "name" || k == "description" {
			continue
		}
		if m.Metadata == nil {
			m.Metadata = map[string]any{}
		}
		m.Metadata[k] = jsonCompatible(v)
	}
	return m, body, nil
}

// splitFrontMatter separates "---\n<yaml>\n---\n<body>". The closing
// line may also be "...", as YAML allows.
func splitFrontMatter(s string) (front, body string, ok bool) {
	first, rest, found := strings.Cut(s, "\n")
	if !found || strings.TrimRight(first, " \t\r") != "---" {
		return "", "", false
	}
	off := 0
	for off <= len(rest) {
		line, _, _ := strings.Cut(rest[off:], "\n")
		end := off + len(line)
		if t := strings.TrimRight(line, " \t\r"); t == "---" || t == "..." {
			after := ""
			if end < len(rest) {
				after = rest[end+1:]
			}
			return rest[:off], after, true
		}
		if end >= len(rest) {
			break
		}
		off = end + 1
	}
	return "", "", false
}

// jsonCompatible turns YAML maps with non-string keys into string-keyed
// maps so metadata can travel in JSON (trace, activity results).
func jsonCompatible(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = jsonCompatible(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = jsonCompatible(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = jsonCompatible(e)
		}
		return out
	}
	return v
}
