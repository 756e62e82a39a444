package procs

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// hostRecord is what a recordStore keeps: the record of one command run
// or process run, which names itself and, while it runs, the process
// group a restarted worker may have to reap.
type hostRecord interface {
	recordID() string
	// runningGroup is the recorded process group and whether the record
	// says it still runs.
	runningGroup() (*GroupIdentity, bool)
}

// errCorruptRecord marks a record file that is not a record.
var errCorruptRecord = errors.New("record is corrupt")

// recordStore keeps one JSON record per command run or process run in a
// directory of this host's data directory, as <dir>/<id>.json, each
// written atomically (readers see the old or the new record, never a
// part). Files next to a record (output, logs) share its <dir>/<id> stem.
type recordStore[T hostRecord] struct {
	dir string
	// kind names the records in errors ("command run"); idKey names their
	// ID in logs ("command_run_id").
	kind, idKey string
}

// openRecordStore creates dir if missing and removes the temp files a
// crashed writer left there.
func openRecordStore[T hostRecord](dir, kind, idKey string) (recordStore[T], error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return recordStore[T]{}, fmt.Errorf("creating %s directory %s: %w", kind, dir, err)
	}
	removeStaleTemps(dir)
	return recordStore[T]{dir: dir, kind: kind, idKey: idKey}, nil
}

// path is the file of id with the given extension (".json", ".log").
func (s recordStore[T]) path(id, ext string) string { return filepath.Join(s.dir, id+ext) }

// save writes rec as <id>.json.
func (s recordStore[T]) save(rec T) error {
	id := rec.recordID()
	if !resourceIDPattern.MatchString(id) {
		return fmt.Errorf("%s ID %q is malformed", s.kind, id)
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("persisting %s %s: %w", s.kind, id, err)
	}
	return s.saveFile(id, ".json", raw)
}

// saveFile writes a file next to id's record.
func (s recordStore[T]) saveFile(id, ext string, data []byte) error {
	if err := writeFileAtomic(s.dir, id+ext, data); err != nil {
		return fmt.Errorf("persisting %s %s: %w", s.kind, id, err)
	}
	return nil
}

// load reads the record of id; ErrNotFound when there is none.
func (s recordStore[T]) load(id string) (T, error) {
	var rec T
	raw, err := os.ReadFile(s.path(id, ".json"))
	if errors.Is(err, os.ErrNotExist) {
		return rec, fmt.Errorf("%w: %s %q is not known on this host (it may have been pruned)", ErrNotFound, s.kind, id)
	}
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, fmt.Errorf("%s %s %w: %w", s.kind, id, errCorruptRecord, err)
	}
	if got := rec.recordID(); got != id {
		return rec, fmt.Errorf("%s %s %w: it names %q", s.kind, id, errCorruptRecord, got)
	}
	return rec, nil
}

// remove deletes id's record and the files next to it with the given
// extensions.
func (s recordStore[T]) remove(id string, exts ...string) {
	os.Remove(s.path(id, ".json"))
	for _, ext := range exts {
		os.Remove(s.path(id, ext))
	}
}

// newest lists the IDs of the stored records, newest first.
func (s recordStore[T]) newest() []string {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil
	}
	type item struct {
		id  string
		mod time.Time
	}
	var items []item
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !resourceIDPattern.MatchString(id) {
			continue
		}
		if info, err := e.Info(); err == nil {
			items = append(items, item{id, info.ModTime()})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].mod.After(items[j].mod) })
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.id
	}
	return ids
}

// recover loads every record, newest first. A record still running was
// left by a worker that is gone, unless its worker still lives: what is
// left of its process group is reaped (see ReapLeftover) and closeLost
// closes and persists it as worker_lost. recover returns the records it
// read, closed ones as closed, without those a live worker still owns.
// A corrupt record is logged and skipped.
func (s recordStore[T]) recover(log *slog.Logger, closeLost func(T) (T, error)) []T {
	var out []T
	for _, id := range s.newest() {
		rec, err := s.load(id)
		if errors.Is(err, errCorruptRecord) {
			log.Warn(s.kind+" record is corrupt; ignored", s.idKey, id, "error", err)
		}
		if err != nil {
			continue
		}
		if group, running := rec.runningGroup(); running {
			lo := ReapLeftover(group)
			logLeftover(log, s.idKey, id, group, lo)
			if lo.Outcome == LeftoverOwnerAlive {
				continue
			}
			if rec, err = closeLost(rec); err != nil {
				log.Error("closing the record of a lost worker's "+s.kind+" failed", s.idKey, id, "error", err)
			}
		}
		out = append(out, rec)
	}
	return out
}

// writeFileAtomic writes data to dir/name through a uniquely named temp
// file and a rename, so readers see the old or the new file, never a part,
// and concurrent writers of one name do not trip over each other.
func writeFileAtomic(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("renaming %s: %w", tmp, err)
	}
	return nil
}

// staleTempAge is how old a temp file must be before it is taken for the
// remains of a crashed write.
const staleTempAge = time.Minute

// removeStaleTemps deletes temp files a crashed writer left in dir.
func removeStaleTemps(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTempAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
