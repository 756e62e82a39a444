package tools

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/tools/procs"
)

func init() { register(workspaceSearchTool()) }

// Bounds of one search.
const (
	searchMaxFileBytes  = 4 << 20
	searchMaxTotalBytes = 256 << 20
	searchMaxFiles      = 50000
	searchMaxLineChars  = 300
	// binarySniffBytes is how far a NUL byte marks a file binary, as git does.
	binarySniffBytes = 8000
)

// WorkspaceSearchArgs are workspace_search's arguments.
type WorkspaceSearchArgs struct {
	Pattern         string `json:"pattern" jsonschema:"minLength=1,maxLength=1000,description=Text to find; with regex, an RE2 regular expression"`
	Regex           bool   `json:"regex,omitempty" jsonschema:"description=Treat pattern as an RE2 regular expression"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
	Path            string `json:"path,omitempty" jsonschema:"maxLength=4096,description=Directory (or file) to search, relative to the workspace root (default: the root)"`
	Glob            string `json:"glob,omitempty" jsonschema:"maxLength=256,description=Only search files matching this glob: matched against the file name, or against the workspace-relative path when it contains a slash (for example *.go or cmd/*/main.go)"`
	MaxResults      int    `json:"max_results,omitempty" jsonschema:"minimum=1,maximum=1000,description=Stop after this many matching lines (default 100)"`
}

// SearchMatch is one matching line.
type SearchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// WorkspaceSearchResult is workspace_search's raw result.
type WorkspaceSearchResult struct {
	Pattern       string        `json:"pattern"`
	Path          string        `json:"path"`
	Matches       []SearchMatch `json:"matches"`
	FilesScanned  int           `json:"files_scanned"`
	FilesMatched  int           `json:"files_matched"`
	SkippedBinary int           `json:"skipped_binary"`
	SkippedLarge  int           `json:"skipped_large"`
	// Truncated is set when max_results or a scan bound stopped the search.
	Truncated bool `json:"truncated"`
	// Hidden counts the files and directories a permission rule hides
	// (Env.Hidden), which are neither searched nor named.
	Hidden int `json:"hidden,omitempty"`
}

func workspaceSearchTool() Definition {
	return Define(Spec{
		Name:           "workspace_search",
		Description:    "Search file contents in the workspace for a literal string or an RE2 regular expression, optionally limited to files matching a glob. Binary files and .git are skipped.",
		ReadOnly:       true,
		Idempotent:     true,
		Local:          true,
		NeedsWorkspace: true,
	}, searchWorkspace, projectWorkspaceSearch)
}

func searchWorkspace(ctx context.Context, env *Env, a WorkspaceSearchArgs) (WorkspaceSearchResult, error) {
	re, err := compileSearch(a)
	if err != nil {
		return WorkspaceSearchResult{}, err
	}
	info, start, err := env.Workspace.Stat(a.Path)
	if err != nil {
		return WorkspaceSearchResult{}, err
	}
	limit := a.MaxResults
	if limit == 0 {
		limit = 100
	}
	s := &searcher{
		env: env, re: re, limit: limit, matchedFiles: map[string]bool{},
		res: WorkspaceSearchResult{Pattern: a.Pattern, Path: start, Matches: []SearchMatch{}},
	}
	if !info.IsDir() {
		if env.hidden(start) {
			s.res.Hidden++
		} else if err := s.scan(start); err != nil && err != fs.SkipAll {
			return WorkspaceSearchResult{}, err
		}
	} else if err := s.walk(ctx, start, a.Glob); err != nil {
		return WorkspaceSearchResult{}, fenixerr.As(err)
	}
	s.res.FilesMatched = len(s.matchedFiles)
	return s.res, nil
}

// compileSearch checks the pattern and glob and compiles the pattern.
func compileSearch(a WorkspaceSearchArgs) (*regexp.Regexp, error) {
	expr := a.Pattern
	if !a.Regex {
		expr = regexp.QuoteMeta(expr)
	}
	if a.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fenixerr.Validation("pattern %q is not a valid RE2 regular expression: %v", a.Pattern, err).WithCode("invalid_pattern")
	}
	if a.Glob != "" {
		if _, err := path.Match(a.Glob, ""); err != nil {
			return nil, fenixerr.Validation("glob %q is malformed: %v", a.Glob, err).WithCode("invalid_glob")
		}
	}
	return re, nil
}

// searcher collects the matches of one workspace_search call within its
// limits.
type searcher struct {
	env          *Env
	re           *regexp.Regexp
	limit        int
	res          WorkspaceSearchResult
	scannedBytes int64
	matchedFiles map[string]bool
}

// walk scans the regular files under start that match glob, skipping .git
// directories below start. Symlinks are not followed and devices, FIFOs
// and sockets are never opened.
func (s *searcher) walk(ctx context.Context, start, glob string) error {
	return fs.WalkDir(s.env.Workspace.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if p == start {
				return err
			}
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != start {
				return fs.SkipDir
			}
			if s.env.hidden(p) {
				s.res.Hidden++
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !globMatches(glob, p) {
			return nil
		}
		if s.env.hidden(p) {
			s.res.Hidden++
			return nil
		}
		return s.scan(p)
	})
}

// scan adds the matching lines of one file; fs.SkipAll once a limit is
// reached.
func (s *searcher) scan(p string) error {
	res := &s.res
	if res.FilesScanned >= searchMaxFiles || s.scannedBytes >= searchMaxTotalBytes {
		res.Truncated = true
		return fs.SkipAll
	}
	r, err := s.env.Workspace.ReadFile(p, searchMaxFileBytes)
	if err != nil {
		// Vanished or not a regular file any more: not a search result.
		return nil
	}
	if r.Truncated {
		res.SkippedLarge++
		return nil
	}
	if bytes.IndexByte(r.Content[:min(len(r.Content), binarySniffBytes)], 0) >= 0 {
		res.SkippedBinary++
		return nil
	}
	res.FilesScanned++
	s.scannedBytes += int64(len(r.Content))
	for i, line := range bytes.Split(r.Content, []byte("\n")) {
		if !s.re.Match(line) {
			continue
		}
		if len(res.Matches) >= s.limit {
			res.Truncated = true
			return fs.SkipAll
		}
		s.matchedFiles[p] = true
		res.Matches = append(res.Matches, SearchMatch{Path: p, Line: i + 1, Text: clipLine(line)})
	}
	return nil
}

func globMatches(glob, p string) bool {
	if glob == "" {
		return true
	}
	subject := path.Base(p)
	if strings.Contains(glob, "/") {
		subject = p
	}
	ok, _ := path.Match(glob, subject)
	return ok
}

func clipLine(line []byte) string {
	text := strings.TrimRight(procs.ValidText(line, false), "\r")
	if r := []rune(text); len(r) > searchMaxLineChars {
		return string(r[:searchMaxLineChars]) + "…"
	}
	return text
}

func projectWorkspaceSearch(_ WorkspaceSearchArgs, r WorkspaceSearchResult) Projection {
	var b strings.Builder
	if len(r.Matches) == 0 {
		fmt.Fprintf(&b, "No matches for %q in %s (%s searched).", r.Pattern, r.Path, plural(r.FilesScanned, "file", "files"))
	} else {
		fmt.Fprintf(&b, "Found %s for %q in %s under %s", plural(len(r.Matches), "matching line", "matching lines"), r.Pattern, plural(r.FilesMatched, "file", "files"), r.Path)
		if r.Truncated {
			b.WriteString(" (stopped early; narrow the search for more)")
		}
		b.WriteString(":")
		for _, m := range r.Matches {
			fmt.Fprintf(&b, "\n%s:%d: %s", m.Path, m.Line, m.Text)
		}
	}
	if r.SkippedBinary+r.SkippedLarge > 0 {
		fmt.Fprintf(&b, "\n(skipped %d binary and %d oversized files)", r.SkippedBinary, r.SkippedLarge)
	}
	if r.Hidden > 0 {
		fmt.Fprintf(&b, "\n(%s hidden by permission rules)", plural(r.Hidden, "entry", "entries"))
	}
	return Projection{
		Content: b.String(),
		Metadata: map[string]any{
			"pattern":        r.Pattern,
			"path":           r.Path,
			"match_count":    len(r.Matches),
			"files_scanned":  r.FilesScanned,
			"files_matched":  r.FilesMatched,
			"skipped_binary": r.SkippedBinary,
			"skipped_large":  r.SkippedLarge,
			"truncated":      r.Truncated,
			"hidden":         r.Hidden,
		},
	}
}

// plural renders "1 file" or "3 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
