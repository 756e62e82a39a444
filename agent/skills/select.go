package skills

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fenixrt/fenix/contract"
)

// Reference forms.
const (
	FormLink   = "link"   // [$name](any-link)
	FormInline = "inline" // $name
)

// Reference is one mention of a skill in a message.
type Reference struct {
	Name string `json:"name"`
	Form string `json:"form"`
}

// FindReferences returns the skill references in text, in order, with
// repeats. The rules:
//
//   - a reference is '$' followed by a name in the skill name grammar
//     (a letter, then letters, digits, '-' or '_'); trailing '-' and '_'
//     are not part of the name, so "$deploy-" refers to "deploy";
//   - the '$' must not follow a letter, digit, '_', '$' or '\', so
//     "US$Fee", "a$b", "$$x" and "\$x" are not references;
//   - the name must not run on into other letters or digits ("$deployé"
//     is not a reference to "deploy");
//   - "[$name](...)" is the link form; the link target is not inspected;
//   - nothing inside Markdown code is a reference: fenced blocks
//     (``` or ~~~) and inline code spans (`...`), where "$HOME" is shell.
//
// Names longer than MaxNameLength are ignored.
func FindReferences(text string) []Reference {
	var refs []Reference
	scanReferences(text, func(r Reference) { refs = append(refs, r) })
	return refs
}

func scanReferences(text string, emit func(Reference)) {
	var fence fenceState
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if fence.toggles(line) || fence.open {
			continue
		}
		scanLine(line, emit)
	}
}

// fenceState tracks whether we are inside a fenced code block. A fence is
// a line indented at most three spaces starting with three or more '`' or
// '~'; it closes with the same character, at least as many times.
type fenceState struct {
	open   bool
	char   byte
	length int
}

func (f *fenceState) toggles(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	if len(line)-len(trimmed) > 3 || len(trimmed) < 3 {
		return false
	}
	c := trimmed[0]
	if c != '`' && c != '~' {
		return false
	}
	n := 0
	for n < len(trimmed) && trimmed[n] == c {
		n++
	}
	if n < 3 {
		return false
	}
	switch {
	case !f.open:
		f.open, f.char, f.length = true, c, n
		return true
	case c == f.char && n >= f.length && strings.TrimSpace(trimmed[n:]) == "":
		f.open = false
		return true
	}
	return false
}

func scanLine(line string, emit func(Reference)) {
	// unclosed[k] records that no closing run of k backticks exists
	// further on, so a line full of lone backticks stays linear.
	var unclosed [64]bool
	for i := 0; i < len(line); {
		switch line[i] {
		case '`':
			k := 1
			for i+k < len(line) && line[i+k] == '`' {
				k++
			}
			if k < len(unclosed) && !unclosed[k] {
				if end := closingRun(line, i+k, k); end >= 0 {
					i = end
					continue
				}
				unclosed[k] = true
			}
			i += k
		case '$':
			name, next := referenceAt(line, i)
			if name != "" {
				form := FormInline
				if i > 0 && line[i-1] == '[' && strings.HasPrefix(line[next:], "](") {
					form = FormLink
				}
				emit(Reference{Name: name, Form: form})
			}
			i = max(next, i+1)
		default:
			i++
		}
	}
}

// closingRun returns the index just past the first run of exactly k
// backticks at or after from, or -1.
func closingRun(line string, from, k int) int {
	for j := from; j < len(line); {
		if line[j] != '`' {
			j++
			continue
		}
		n := 0
		for j+n < len(line) && line[j+n] == '`' {
			n++
		}
		if n == k {
			return j + n
		}
		j += n
	}
	return -1
}

// referenceAt parses "$name" at line[i] == '$'. It returns the name ("" if
// this is no reference) and the index after the scanned name characters.
func referenceAt(line string, i int) (string, int) {
	if i > 0 {
		prev, _ := utf8.DecodeLastRuneInString(line[:i])
		if prev == '_' || prev == '$' || prev == '\\' || unicode.IsLetter(prev) || unicode.IsDigit(prev) {
			return "", i + 1
		}
	}
	j := i + 1
	if j >= len(line) || !isASCIILetter(line[j]) {
		return "", i + 1
	}
	for j < len(line) && (isASCIILetter(line[j]) || isASCIIDigit(line[j]) || line[j] == '-' || line[j] == '_') {
		j++
	}
	if j < len(line) {
		if next, _ := utf8.DecodeRuneInString(line[j:]); unicode.IsLetter(next) || unicode.IsDigit(next) {
			return "", j
		}
	}
	name := strings.TrimRight(line[i+1:j], "-_")
	if len(name) > MaxNameLength {
		return "", j
	}
	return name, i + 1 + len(name)
}

func isASCIILetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isASCIIDigit(c byte) bool  { return '0' <= c && c <= '9' }

// LoadFailure is a referenced skill that is in the catalog but could not
// be loaded.
type LoadFailure struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

// Selection is what a round's messages ask for.
type Selection struct {
	// Active is the whole catalog, for the Active Skills section.
	Active []Entry `json:"active"`
	// Selected are the referenced skills, loaded, in first-mention order.
	Selected []Package `json:"selected"`
	// References are the distinct referenced names with the form of their
	// first mention.
	References []Reference `json:"references"`
	// Unknown are referenced names that are not in the catalog. They are
	// reported, never fatal: "$HOME" in prose is not a mistake.
	Unknown []string `json:"unknown,omitempty"`
	// Failed are catalog skills that were referenced but did not load.
	Failed []LoadFailure `json:"failed,omitempty"`
}

// SelectedNames lists the selected skills' names.
func (s Selection) SelectedNames() []string {
	out := make([]string, len(s.Selected))
	for i, p := range s.Selected {
		out[i] = p.Name
	}
	return out
}

// Select finds the skills referenced in messages and loads them. Tool
// messages are not scanned: their content comes from outside (a web page,
// command output) and must not pull skills into the prompt. Names match
// case-sensitively.
func (c *Catalog) Select(messages []contract.Message) Selection {
	sel := Selection{Active: c.List()}
	seen := map[string]bool{}
	for _, m := range messages {
		if m.Role == contract.RoleTool {
			continue
		}
		scanReferences(m.Content, func(r Reference) {
			if seen[r.Name] {
				return
			}
			seen[r.Name] = true
			sel.References = append(sel.References, r)
		})
	}
	for _, r := range sel.References {
		if _, ok := c.Lookup(r.Name); !ok {
			sel.Unknown = append(sel.Unknown, r.Name)
			continue
		}
		pkg, err := c.Load(r.Name)
		if err != nil {
			sel.Failed = append(sel.Failed, LoadFailure{Name: r.Name, Error: err.Error()})
			continue
		}
		sel.Selected = append(sel.Selected, pkg)
	}
	return sel
}
