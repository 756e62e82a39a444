package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenixrt/fenix/fenixerr"
)

// denySecret is a judge that refuses any access reaching secret/.
func denySecret(seen *[]string) Judge {
	return func(access Access, asked, reached string) error {
		if seen != nil {
			*seen = append(*seen, access.String()+" "+asked+" -> "+reached)
		}
		if reached == "secret" || strings.HasPrefix(reached, "secret/") {
			return errors.New("secret/ is off limits")
		}
		return nil
	}
}

func TestJudgeSeesWhereLinksLead(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "secret/key"), "hunter2")
	mustWrite(t, filepath.Join(dir, "notes/a.txt"), "notes")
	if err := os.Symlink("secret", filepath.Join(dir, "s")); err != nil {
		t.Fatal(err)
	}
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var seen []string
	ws.SetJudge(denySecret(&seen))

	if r, err := ws.ReadFile("notes/a.txt", 0); err != nil || string(r.Content) != "notes" {
		t.Fatalf("read notes/a.txt = %q, %v", r.Content, err)
	}
	_, err = ws.ReadFile("s/key", 0)
	if !errors.Is(err, fenixerr.ErrPermissionDenied) || !strings.Contains(err.Error(), `"s/key"`) || !strings.Contains(err.Error(), "off limits") {
		t.Fatalf("read s/key: %v, want a permission denial naming the path and the judge's reason", err)
	}
	if _, err := ws.WriteFile("s/key", []byte("pwned"), 0); !errors.Is(err, fenixerr.ErrPermissionDenied) {
		t.Fatalf("write s/key: %v, want a permission denial", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "secret/key")); string(b) != "hunter2" {
		t.Fatalf("secret/key = %q, want it unchanged", b)
	}
	want := []string{"read notes/a.txt -> notes/a.txt", "read s/key -> secret/key", "write s/key -> secret/key"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Fatalf("judged %q, want %q", seen, want)
	}
}

// A path flipping between a plain directory and a symlink to secret/
// while reads go through it must never return the secret: the file the
// judge saw is the file opened, and a symlink that appears after the
// judgement fails the read.
func TestReadSymlinkSwapRace(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "secret/key"), "hunter2")
	mustWrite(t, filepath.Join(dir, "plain/key"), "harmless")
	ws, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.SetJudge(denySecret(nil))
	// d is alternately the real directory plain (renamed in) and a
	// symlink to secret, so an open that follows links after the
	// judgement would reach secret/key.
	link := filepath.Join(dir, "d")
	if err := os.Rename(filepath.Join(dir, "plain"), link); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var flipsSoFar atomic.Int64
	flipped := make(chan int)
	go func() {
		n := 0
		parked := filepath.Join(dir, "parked")
		tmp := filepath.Join(dir, "d.tmp")
		for !stop.Load() {
			if n%2 == 0 {
				// d is the directory: park it, put the link in.
				os.Remove(tmp)
				if os.Symlink("secret", tmp) != nil || os.Rename(link, parked) != nil {
					continue
				}
				if os.Rename(tmp, link) != nil {
					os.Rename(parked, link)
					continue
				}
			} else if os.Remove(link) != nil || os.Rename(parked, link) != nil {
				continue
			}
			n++
			flipsSoFar.Store(int64(n))
		}
		flipped <- n
	}()
	flips := -1
	defer func() {
		if flips < 0 {
			stop.Store(true)
			<-flipped
		}
	}()
	// Reads go on until the link has flipped often enough to race them:
	// how many reads that takes depends on how fast a read is.
	var ok, refused int
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 3000 || (flipsSoFar.Load() < 200 && time.Now().Before(deadline)); i++ {
		r, err := ws.ReadFile("d/key", 0)
		switch {
		case err == nil && string(r.Content) == "harmless":
			ok++
		case err == nil:
			t.Fatalf("read %d returned %q (%d ok, %d refused before it)", i, r.Content, ok, refused)
		case errors.Is(err, fenixerr.ErrPermissionDenied), errors.Is(err, fenixerr.ErrWorkspaceEscape):
			refused++
		case errors.Is(err, fenixerr.ErrValidation):
			refused++ // d missing between renames, or a symlink where the walk wants a directory
		default:
			t.Fatalf("read %d: %v", i, err)
		}
	}
	stop.Store(true)
	flips = <-flipped
	t.Logf("%d reads of plain/key, %d refused, %d flips", ok, refused, flips)
	if ok == 0 || refused == 0 || flips < 100 {
		t.Fatalf("the race did not happen: %d ok, %d refused, %d flips", ok, refused, flips)
	}
}

func mustWrite(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
