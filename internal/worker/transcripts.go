package worker

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fenixrt/fenix/hooks/claudecode"
)

// transcriptSweepInterval is how often old transcript files are deleted
// while the worker runs (once at start too).
const transcriptSweepInterval = time.Hour

// openTranscripts opens <DataDir>/transcripts, where the transcript files
// hooks read are written redacted (the worker's Redactor) and 0600, and
// deletes those past TranscriptRetention.
func (w *Worker) openTranscripts() (*claudecode.TranscriptWriter, error) {
	t, err := claudecode.NewTranscriptWriter(filepath.Join(w.cfg.DataDir, transcriptsDir))
	if err != nil {
		return nil, err
	}
	t.Redactor = w.cfg.Redactor
	w.sweepTranscripts(t)
	return t, nil
}

func (w *Worker) sweepTranscripts(t *claudecode.TranscriptWriter) {
	n, err := t.Sweep(w.cfg.TranscriptRetention, time.Now())
	if err != nil {
		w.cfg.Logger.Warn("deleting old transcript files failed", "dir", t.Dir, "error", err)
	}
	if n > 0 {
		w.cfg.Logger.Info("deleted old transcript files", "dir", t.Dir, "count", n, "retention", w.cfg.TranscriptRetention)
	}
}

// startTranscriptSweep deletes old transcript files every
// transcriptSweepInterval until Stop.
func (w *Worker) startTranscriptSweep() {
	if t := w.Activities.Transcripts; t != nil {
		w.sweeper = startPeriodic(transcriptSweepInterval, func(context.Context) { w.sweepTranscripts(t) })
	}
}

func (w *Worker) stopTranscriptSweep() { w.sweeper.stop() }
