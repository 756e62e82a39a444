package observability

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fenixrt/fenix/contextstore"
)

// contextStoreCollector exports a shared context store's counters, read
// from the store at each scrape.
type contextStoreCollector struct {
	stats func() contextstore.Stats
	descs []contextStoreMetric
}

type contextStoreMetric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(contextstore.Stats) int64
}

// RegisterContextStore exports the store's traffic, size limit refusals
// and garbage collection as fenix_context_store_* metrics.
func (m *Metrics) RegisterContextStore(stats func() contextstore.Stats) error {
	counter := func(name, help string, v func(contextstore.Stats) int64) contextStoreMetric {
		return contextStoreMetric{prometheus.NewDesc("fenix_context_store_"+name, help, nil, nil), prometheus.CounterValue, v}
	}
	gauge := func(name, help string, v func(contextstore.Stats) int64) contextStoreMetric {
		return contextStoreMetric{prometheus.NewDesc("fenix_context_store_"+name, help, nil, nil), prometheus.GaugeValue, v}
	}
	return m.registry.Register(&contextStoreCollector{stats: stats, descs: []contextStoreMetric{
		counter("puts_total", "Message lists stored, retries of stored content included.", func(s contextstore.Stats) int64 { return s.Puts }),
		counter("dedup_puts_total", "Puts of content already in the store (retries, concurrent writers).", func(s contextstore.Stats) int64 { return s.DedupPuts }),
		counter("put_bytes_total", "Bytes of new content written.", func(s contextstore.Stats) int64 { return s.PutBytes }),
		counter("gets_total", "Message lists read.", func(s contextstore.Stats) int64 { return s.Gets }),
		counter("get_bytes_total", "Bytes read.", func(s contextstore.Stats) int64 { return s.GetBytes }),
		counter("misses_total", "Reads of a reference the store does not hold.", func(s contextstore.Stats) int64 { return s.Misses }),
		counter("too_large_total", "Puts refused by the size limit (FENIX_CONTEXT_MAX_BYTES).", func(s contextstore.Stats) int64 { return s.TooLarge }),
		counter("errors_total", "Database errors.", func(s contextstore.Stats) int64 { return s.Errors }),
		counter("gc_runs_total", "Garbage collections this worker ran.", func(s contextstore.Stats) int64 { return s.GCRuns }),
		counter("gc_deleted_blobs_total", "Blobs deleted by this worker's collections.", func(s contextstore.Stats) int64 { return s.GCDeletedBlobs }),
		counter("gc_deleted_bytes_total", "Bytes deleted by this worker's collections.", func(s contextstore.Stats) int64 { return s.GCDeletedBytes }),
		gauge("stored_blobs", "Blobs in the whole store after this worker's last collection.", func(s contextstore.Stats) int64 { return s.StoredBlobs }),
		gauge("stored_bytes", "Bytes in the whole store after this worker's last collection.", func(s contextstore.Stats) int64 { return s.StoredBytes }),
	}})
}

func (c *contextStoreCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d.desc
	}
}

func (c *contextStoreCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, d := range c.descs {
		ch <- prometheus.MustNewConstMetric(d.desc, d.kind, float64(d.value(s)))
	}
}
