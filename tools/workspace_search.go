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
}

func workspaceSearchTool() Definition {
	return Define(Spec{
		Name:           "workspace_search",
		Description:    "Search file contents in the workspace for a literal string or an RE2 regular expression, optionally limited to files matching a glob. Binary files and .git are skipped.",
		Idempotent:     true,
		Local:          true,
		NeedsWorkspace: true,
	}, searchWorkspace, projectWorkspaceSearch)
}

func searchWorkspace(ctx context.Context, env *Env, a WorkspaceSearchArgs) (WorkspaceSearchResult, error) {
	expr := a.Pattern
	if !a.Regex {
		expr = regexp.QuoteMeta(expr)
	}
	if a.CaseInsensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return WorkspaceSearchResult{}, fenixerr.Validation("pattern %q is not a valid RE2 regular expression: %v", a.Pattern, err).WithCode("invalid_pattern")
	}
	if a.Glob != "" {
		if _, err := path.Match(a.Glob, ""); err != nil {
			return WorkspaceSearchResult{}, fenixerr.Validation("glob %q is malformed: %v", a.Glob, err).WithCode("invalid_glob")
		}
	}
	info, start, err := env.Workspace.Stat(a.Path)
	if err != nil {
		return WorkspaceSearchResult{}, err
	}
	limit := a.MaxResults
	if limit == 0 {
		limit = 100
	}
	res := WorkspaceSearchResult{Pattern: a.Pattern, Path: start, Matches: []SearchMatch{}}
	var scannedBytes int64
	matchedFiles := map[string]bool{}

	scan := func(p string) error {
		if res.FilesScanned >= searchMaxFiles || scannedBytes >= searchMaxTotalBytes {
			res.Truncated = true
			return fs.SkipAll
		}
		r, err := env.Workspace.ReadFile(p, searchMaxFileBytes)
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
		scannedBytes += int64(len(r.Content))
		for i, line := range bytes.Split(r.Content, []byte("\n")) {
			if !re.Match(line) {
				continue
			}
			if len(res.Matches) >= limit {
				res.Truncated = true
				return fs.SkipAll
			}
			matchedFiles[p] = true
			res.Matches = append(res.Matches, SearchMatch{Path: p, Line: i + 1, Text: clipLine(line)})
		}
		return nil
	}

	if !info.IsDir() {
		if err := scan(start); err != nil && err != fs.SkipAll {
			return WorkspaceSearchResult{}, err
		}
	} else {
		err = fs.WalkDir(env.Workspace.FS(), start, func(p string, d fs.DirEntry, err error) error {
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
				return nil
			}
			// Symlinks are not followed and devices, FIFOs and sockets
			// are never opened.
			if !d.Type().IsRegular() || !globMatches(a.Glob, p) {
				return nil
			}
			return scan(p)
		})
		if err != nil {
			return WorkspaceSearchResult{}, fenixerr.As(err)
		}
	}
	res.FilesMatched = len(matchedFiles)
	return res, nil
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
