package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/internal/harness/benchfs"
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

// How the skills a round uses cost with the number of files in a skill
// directory: Select, as PrepareTurn calls it, with a message referring to
// the skill (which loads it: SKILL.md and the listing of its files, capped
// at MaxListedFiles), and Reload, the catalog scan of a skill operation:
//
//	go test -run '^$' -bench 'SkillFiles' -benchtime 20x ./agent/skills
//
// "tree" is a project tree (directories of 100 files, ten per level
// above); "flat" puts every file in the skill's own directory.
func BenchmarkSkillFiles(b *testing.B) {
	for _, shape := range []struct {
		name  string
		build func(testing.TB, string, int) string
	}{{"tree", benchfs.Tree}, {"flat", benchfs.Flat}} {
		for _, sz := range benchfs.Sizes {
			root := b.TempDir()
			skillDir := filepath.Join(root, "installed", "big")
			shape.build(b, skillDir, sz.Files)
			if err := os.WriteFile(filepath.Join(skillDir, ManifestFile), []byte(manifest("big", "Works on a big tree.")), 0o644); err != nil {
				b.Fatal(err)
			}
			for _, other := range []string{"deploy", "review"} {
				dir := filepath.Join(root, "curated", other)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest(other, "Does "+other+".")), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			c, err := Open(Roots{System: filepath.Join(root, "system"), Curated: filepath.Join(root, "curated"), Installed: filepath.Join(root, "installed")})
			if err != nil {
				b.Fatal(err)
			}
			messages := []contract.Message{{Role: contract.RoleUser, Content: "Use $big to tidy the tree, then [$deploy](skill://deploy)."}}
			b.Run("select/"+shape.name+"/"+sz.Name, func(b *testing.B) {
				var sel Selection
				b.ReportAllocs()
				for b.Loop() {
					sel = c.Select(messages)
				}
				if len(sel.Selected) != 2 || len(sel.Failed) != 0 {
					b.Fatalf("selected %v, failed %v", sel.SelectedNames(), sel.Failed)
				}
				b.ReportMetric(float64(len(sel.Selected[0].Files)), "files_listed")
			})
			b.Run("reload/"+shape.name+"/"+sz.Name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := c.Reload(); err != nil {
						b.Fatal(err)
					}
				}
				if len(c.List()) != 3 {
					b.Fatalf("%d skills, want 3", len(c.List()))
				}
			})
		}
	}
}
