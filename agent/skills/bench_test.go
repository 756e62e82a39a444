package skills

import (
	"strings"
	"testing"
)

// BenchmarkFindReferences shows the reference scan is linear: it runs over
// the whole transcript on every round.
func BenchmarkFindReferences(b *testing.B) {
	const chunk = "Deploy with $deploy, see [$review](x). Costs US$5; run `echo $HOME`.\n```\n$PATH\n```\n"
	for _, size := range []struct {
		name  string
		bytes int
	}{{"1KB", 1 << 10}, {"1MB", 1 << 20}, {"10MB", 10 << 20}} {
		b.Run(size.name, func(b *testing.B) {
			text := strings.Repeat(chunk, size.bytes/len(chunk)+1)[:size.bytes]
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				scanReferences(text, func(Reference) {})
			}
		})
	}
}
