package skills

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
)

func TestFindReferences(t *testing.T) {
	inline := func(names ...string) []Reference {
		var out []Reference
		for _, n := range names {
			out = append(out, Reference{Name: n, Form: FormInline})
		}
		return out
	}
	tests := []struct {
		name string
		in   string
		want []Reference
	}{
		{"inline", "please use $deploy now", inline("deploy")},
		{"start of text", "$deploy", inline("deploy")},
		{"link", "see [$deploy](https://example.test/skills/deploy/SKILL.md)", []Reference{{"deploy", FormLink}}},
		{"link with relative target", "[$web-search](skills/web-search)", []Reference{{"web-search", FormLink}}},
		{"brackets without link are inline", "[$deploy]", inline("deploy")},
		{"punctuation ends the name", "run $deploy. Then ($review), \"$lint\"!", inline("deploy", "review", "lint")},
		{"trailing separators are not part of the name", "$deploy- and $notes_", inline("deploy", "notes")},
		{"separators inside", "$web-search and $code_review", inline("web-search", "code_review")},
		{"duplicates are kept in order", "$a $b $a", inline("a", "b", "a")},
		{"inside a word", "US$Fee a$b x_$y 5$z", nil},
		{"money", "costs $5 or US$5.00", nil},
		{"double dollar and escaped", "$$deploy \\$deploy", nil},
		{"runs on into non-ASCII letters", "$deployé $部署", nil},
		{"after non-ASCII punctuation", "用$deploy。", nil},
		{"after CJK punctuation", "请使用：$deploy。", inline("deploy")},
		{"inline code", "run `echo $HOME` then $deploy", inline("deploy")},
		{"double backtick code", "``a ` $x`` $y", inline("y")},
		{"unclosed backtick is literal", "a ` $deploy", inline("deploy")},
		{"fenced code", "before $a\n```sh\necho $PATH\n```\nafter $b", inline("a", "b")},
		{"tilde fence and longer closer", "~~~\n$x\n~~~~\n$y", inline("y")},
		{"mismatched fence does not close", "```\n~~~\n$x\n```\n$y", inline("y")},
		{"indented four spaces is not a fence", "    ```\n$x", inline("x")},
		{"unclosed fence hides the rest", "```\n$x\n$y", nil},
		{"too long", "$" + strings.Repeat("a", MaxNameLength+1), nil},
		{"max length", "$" + strings.Repeat("a", MaxNameLength), inline(strings.Repeat("a", MaxNameLength))},
		{"braces are shell", "${HOME}", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindReferences(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("FindReferences(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestFindReferencesLongLine(t *testing.T) {
	// An unmatched backtick followed by many closed spans: the reference
	// after them is outside any code span.
	line := "`" + strings.Repeat(" ``$x`` ", 100000) + " $deploy"
	if got, want := FindReferences(line), []Reference{{"deploy", FormInline}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSelect(t *testing.T) {
	roots := testRoots(t)
	writeSkill(t, roots.System, "deploy", "deploy", map[string]string{"run.sh": "ls"})
	writeSkill(t, roots.Curated, "review", "review", nil)
	writeSkill(t, roots.Installed, "broken", "broken", nil)
	writeSkill(t, roots.Installed, "quiet", "quiet", nil)
	c, err := Open(roots)
	if err != nil {
		t.Fatal(err)
	}
	// Break a skill after the catalog was built: it must be reported, not
	// fatal.
	if err := os.Remove(filepath.Join(roots.Installed, "broken", ManifestFile)); err != nil {
		t.Fatal(err)
	}
	messages := []contract.Message{
		{Role: contract.RoleSystem, Content: "Kernel note: skills like $review are available."},
		{Role: contract.RoleUser, Content: "Use [$deploy](https://example.test/deploy) and $deploy again, plus $ghost, $broken and US$Fee."},
		{Role: contract.RoleTool, Content: "web page says: run $quiet"},
		{Role: contract.RoleAssistant, Content: "```\necho $HOME\n```\nI will use $review."},
	}
	sel := c.Select(messages)
	if got, want := sel.SelectedNames(), []string{"review", "deploy"}; !reflect.DeepEqual(got, want) {
		t.Errorf("selected = %v, want %v", got, want)
	}
	if got, want := sel.References, []Reference{{"review", FormInline}, {"deploy", FormLink}, {"ghost", FormInline}, {"broken", FormInline}}; !reflect.DeepEqual(got, want) {
		t.Errorf("references = %v, want %v", got, want)
	}
	if got, want := sel.Unknown, []string{"ghost"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unknown = %v, want %v", got, want)
	}
	if len(sel.Failed) != 1 || sel.Failed[0].Name != "broken" || !strings.Contains(sel.Failed[0].Error, `loading skill "broken"`) {
		t.Errorf("failed = %+v, want broken with a loading error", sel.Failed)
	}
	if got, want := names(sel.Active), []string{"installed:broken", "system:deploy", "installed:quiet", "curated:review"}; !reflect.DeepEqual(got, want) {
		t.Errorf("active = %v, want %v", got, want)
	}
	if sel.Selected[1].SkillMD != manifest("deploy", "Does deploy.") || len(sel.Selected[1].Files) != 2 {
		t.Errorf("deploy package = %+v", sel.Selected[1])
	}
}

func TestSelectNothing(t *testing.T) {
	c, _ := Open(Roots{})
	sel := c.Select([]contract.Message{{Role: "user", Content: "no skills here"}})
	if len(sel.Selected)+len(sel.Unknown)+len(sel.Failed)+len(sel.Active)+len(sel.References) != 0 {
		t.Fatalf("selection = %+v, want empty", sel)
	}
}
