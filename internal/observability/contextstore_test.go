package observability

import (
	"testing"

	"github.com/fenixrt/fenix/contextstore"
)

func TestContextStoreMetrics(t *testing.T) {
	m := newTestMetrics(t)
	stats := contextstore.Stats{Puts: 5, DedupPuts: 2, PutBytes: 3 << 20, Gets: 7, TooLarge: 1, GCRuns: 1, GCDeletedBlobs: 4, StoredBlobs: 9}
	if err := m.RegisterContextStore(func() contextstore.Stats { return stats }); err != nil {
		t.Fatal(err)
	}
	families := scrape(t, m.Handler())
	for name, want := range map[string]float64{
		"fenix_context_store_puts_total":             5,
		"fenix_context_store_dedup_puts_total":       2,
		"fenix_context_store_put_bytes_total":        3 << 20,
		"fenix_context_store_gets_total":             7,
		"fenix_context_store_too_large_total":        1,
		"fenix_context_store_gc_deleted_blobs_total": 4,
		"fenix_context_store_stored_blobs":           9,
	} {
		s := sample(t, families, name, nil)
		got := s.GetCounter().GetValue() + s.GetGauge().GetValue()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	stats.Puts = 6 // read at each scrape
	if got := sample(t, scrape(t, m.Handler()), "fenix_context_store_puts_total", nil).GetCounter().GetValue(); got != 6 {
		t.Errorf("after another put: %v", got)
	}
}
