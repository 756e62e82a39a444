package operator

import (
	"slices"

	"github.com/fenixrt/fenix/workspace"
)

// maxDirEntries bounds how many entries of one directory a snapshot reads:
// a directory with more (a flat dump of 100,000 files) shows that many of
// them, in the file system's order, sorted, and the listing is marked
// truncated. Reading all of them cost 0.6 s per round at 100,000.
var maxDirEntries = 4096

// listFiles walks the workspace breadth-first, so a capped listing shows
// the top of the tree rather than one deep corner of it. Paths hidden
// reports are counted, not listed, and hidden directories not entered.
func listFiles(ws *workspace.Workspace, l Limits, hidden func(rel string) bool) (files []string, hiddenCount int, truncated, depthLimited bool) {
	type dir struct {
		rel   string
		depth int
	}
	files = []string{}
	queue := []dir{{".", 1}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		entries, more, _, err := ws.ReadDirLimit(d.rel, maxDirEntries)
		if err != nil {
			continue // unreadable directories are simply not expanded
		}
		truncated = truncated || more
		for _, e := range entries {
			if len(files) == l.MaxFiles {
				return files, hiddenCount, true, depthLimited
			}
			rel := e.Name()
			if d.rel != "." {
				rel = d.rel + "/" + e.Name()
			}
			if hidden(rel) {
				hiddenCount++
				continue
			}
			if !e.IsDir() {
				files = append(files, rel)
				continue
			}
			files = append(files, rel+"/")
			switch {
			case slices.Contains(l.SkipDirs, e.Name()):
			case d.depth >= l.MaxDepth:
				depthLimited = true
			default:
				queue = append(queue, dir{rel, d.depth + 1})
			}
		}
	}
	return files, hiddenCount, truncated, depthLimited
}
