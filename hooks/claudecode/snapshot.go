package claudecode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Snapshot is what a load read: each settings file's bytes and, for each,
// the script directories its commands launch as pinned in the
// ScriptStore. A worker keeps the snapshot of the policy last accepted
// (at a start or on SIGHUP) in its data directory; loading from it
// (LoadOptions.Snapshot) reads nothing where the settings point, so what
// a command wrote into a project's .claude/ does not become the policy
// because the worker restarted.
type Snapshot struct {
	Files []SnapshotFile `json:"files"`
}

// SnapshotFile is one settings file as loaded.
type SnapshotFile struct {
	// Path is the file's absolute path.
	Path string `json:"path"`
	Data []byte `json:"data"`
	// Trees are the script directories its commands launch, pinned.
	Trees []SnapshotTree `json:"trees,omitempty"`
	// Absent are the scripts its commands launch that did not exist.
	Absent []string `json:"absent,omitempty"`
}

// SnapshotTree is one pinned script directory.
type SnapshotTree struct {
	// Source is the directory the scripts were read from.
	Source string `json:"source"`
	// Stored is the copy in the ScriptStore, which the hooks run.
	Stored string `json:"stored"`
	// Hash is the tree's content hash (and Stored's name).
	Hash     string   `json:"hash"`
	Launched []string `json:"launched"`
	Alone    bool     `json:"alone,omitempty"`
	// Packages are the node_modules directories linked, not copied.
	Packages []string `json:"packages,omitempty"`
}

// SnapshotOf is what sources were loaded from. Their scripts must have
// been pinned into a ScriptStore (LoadOptions.Scripts): a snapshot names
// the stored copies.
func SnapshotOf(sources []*Source) (Snapshot, error) {
	var s Snapshot
	for _, src := range sources {
		abs, err := filepath.Abs(src.Path)
		if err != nil {
			return Snapshot{}, fmt.Errorf("hook settings %s: %w", src.Path, err)
		}
		f := SnapshotFile{Path: abs, Data: src.Data, Absent: src.absentScripts}
		for _, t := range src.pinned {
			if t.stored == "" {
				return Snapshot{}, fmt.Errorf("hook settings %s: its scripts in %s were not pinned into a script store", src.Path, t.source)
			}
			f.Trees = append(f.Trees, SnapshotTree{Source: t.source, Stored: t.stored, Hash: t.hash,
				Launched: t.launched, Alone: t.alone, Packages: t.packages})
		}
		s.Files = append(s.Files, f)
	}
	return s, nil
}

// Stored lists the script store copies the snapshot's hooks run.
func (s Snapshot) Stored() []string {
	var out []string
	for _, f := range s.Files {
		for _, t := range f.Trees {
			out = append(out, t.Stored)
		}
	}
	return out
}

// SnapshotChange is one difference between two snapshots.
type SnapshotChange struct {
	// Path is the settings file, or the script directory, that differs.
	Path string
	// What says how: "created", "removed", "changed", "scripts changed".
	What string
}

func (c SnapshotChange) String() string { return c.Path + " " + c.What }

// Changes lists what differs in now from s, the accepted snapshot: files
// created, removed or rewritten, and script directories whose contents
// (or the scripts launched from them) changed. The order of the files
// counts (a later file's rules are read after an earlier one's): a file
// that now comes before one it came after is reported as moved.
func (s Snapshot) Changes(now Snapshot) []SnapshotChange {
	var out []SnapshotChange
	accepted := map[string]int{}
	for i, f := range s.Files {
		accepted[f.Path] = i
	}
	current := map[string]bool{}
	last := -1 // the accepted position of the last file kept
	for _, f := range now.Files {
		current[f.Path] = true
		j, ok := accepted[f.Path]
		switch {
		case !ok:
			out = append(out, SnapshotChange{Path: f.Path, What: "created"})
			continue
		case !bytes.Equal(s.Files[j].Data, f.Data):
			out = append(out, SnapshotChange{Path: f.Path, What: "changed"})
		case j < last:
			out = append(out, SnapshotChange{Path: f.Path, What: "moved in the load order"})
		}
		last = max(last, j)
		out = append(out, treeChanges(s.Files[j].Trees, f.Trees)...)
	}
	for _, f := range s.Files {
		if !current[f.Path] {
			out = append(out, SnapshotChange{Path: f.Path, What: "removed"})
		}
	}
	return out
}

// treeChanges lists the script directories of one file whose contents
// differ, each once.
func treeChanges(accepted, now []SnapshotTree) []SnapshotChange {
	var out []SnapshotChange
	report := func(dir string) {
		c := SnapshotChange{Path: dir, What: "scripts changed"}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	hashes := func(trees []SnapshotTree) map[string]string {
		m := map[string]string{}
		for _, t := range trees {
			m[t.Source] = t.Hash
		}
		return m
	}
	before, after := hashes(accepted), hashes(now)
	for _, t := range now {
		if before[t.Source] != t.Hash {
			report(t.Source)
		}
	}
	for _, t := range accepted {
		if _, ok := after[t.Source]; !ok {
			report(t.Source)
		}
	}
	return out
}

// acceptedTree is dir's tree in the accepted policy, read from its stored
// copy and checked against the hash it was accepted with.
func (p *pinner) acceptedTree(dir, name string) (*pinnedTree, error) {
	for _, t := range p.trees {
		if t.source == dir && t.has(name) {
			return t, nil
		}
	}
	for _, rec := range p.accepted.Trees {
		if rec.Source != dir || !rec.holds(name) {
			continue
		}
		if p.store == nil || filepath.Dir(rec.Stored) != p.store.Dir() {
			return nil, fmt.Errorf("the accepted copy of hook scripts %s is %s, outside the script store", dir, rec.Stored)
		}
		t, err := readTree(rec.Stored, rec.Launched, rec.Alone)
		if err != nil {
			return nil, fmt.Errorf("the accepted copy of hook scripts %s: %w", dir, err)
		}
		t.source, t.packages, t.stored = rec.Source, rec.Packages, rec.Stored
		t.computeHash()
		if t.hash != rec.Hash {
			return nil, fmt.Errorf("the accepted copy of hook scripts %s in %s no longer holds what was accepted (content hash %s, accepted %s)", dir, rec.Stored, t.hash, rec.Hash)
		}
		p.trees = append(p.trees, t)
		return t, nil
	}
	return nil, fmt.Errorf("hook script %s is not in the accepted policy", filepath.Join(dir, name))
}

// acceptedHas reports whether the accepted policy pinned path.
func (p *pinner) acceptedHas(path string) bool {
	dir, name := filepath.Dir(path), filepath.Base(path)
	for _, rec := range p.accepted.Trees {
		if rec.Source == dir && rec.holds(name) {
			return true
		}
	}
	return false
}

// holds reports whether the stored copy has the file name at its top: a
// script launched from the directory (not necessarily among Launched,
// which lists only the scripts that had the directory read).
func (t SnapshotTree) holds(name string) bool {
	info, err := os.Lstat(filepath.Join(t.Stored, name))
	return err == nil && info.Mode().IsRegular()
}
