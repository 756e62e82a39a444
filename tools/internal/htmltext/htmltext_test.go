package htmltext

import (
	"net/url"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	base, _ := url.Parse("https://example.test/docs/")
	tests := []struct {
		name      string
		html      string
		wantTitle string
		wantText  string
		wantLinks []Link
	}{
		{
			name:      "paragraphs and headings",
			html:      "<title> A  page </title><h1>Head</h1><p>One   two\nthree</p><p>Four</p>",
			wantTitle: "A page",
			wantText:  "Head\n\nOne two three\n\nFour",
		},
		{
			name:     "scripts, styles and templates are dropped",
			html:     "<p>keep</p><script>var x = '<p>no</p>';</script><style>p{}</style><noscript>no</noscript><template><p>no</p></template>",
			wantText: "keep",
		},
		{
			name:     "inline elements keep spacing",
			html:     "<p>Hello <b>bold</b> and <i>it</i>alic.</p>",
			wantText: "Hello bold and italic.",
		},
		{
			name:     "lists and breaks",
			html:     "<ul><li>a</li><li>b</li></ul>line<br>next",
			wantText: "- a\n- b\n\nline\nnext",
		},
		{
			name:     "pre keeps whitespace",
			html:     "<pre>  x\n    y</pre>",
			wantText: "x\n    y",
		},
		{
			name:      "links resolved, deduplicated, non-http dropped",
			html:      `<a href="guide">Guide</a> <a href="guide">again</a> <a href="mailto:x@y">mail</a> <a href="#top">top</a> <a href="https://other.test/x#frag">Other</a>`,
			wantText:  "Guide again mail top Other",
			wantLinks: []Link{{Text: "Guide", URL: "https://example.test/docs/guide"}, {Text: "Other", URL: "https://other.test/x"}},
		},
		{
			name:     "image alt text",
			html:     `<p>see <img src="x.png" alt="diagram"></p>`,
			wantText: "see [diagram]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Extract(strings.NewReader(tt.html), base)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Title != tt.wantTitle || doc.Text != tt.wantText {
				t.Errorf("got title %q text %q, want %q %q", doc.Title, doc.Text, tt.wantTitle, tt.wantText)
			}
			if len(doc.Links) != len(tt.wantLinks) {
				t.Fatalf("links = %+v, want %+v", doc.Links, tt.wantLinks)
			}
			for i := range doc.Links {
				if doc.Links[i] != tt.wantLinks[i] {
					t.Errorf("link %d = %+v, want %+v", i, doc.Links[i], tt.wantLinks[i])
				}
			}
		})
	}
}

// A page chooses its title, its link texts and, through a long base URL
// every relative link resolves against, its link URLs; each is bounded so
// one page cannot blow up the result it is repeated in.
func TestExtractBoundsWhatThePageChooses(t *testing.T) {
	base, _ := url.Parse("https://example.test/" + strings.Repeat("d", 60<<10) + "/")
	long := strings.Repeat("x", 100<<10)
	page := "<title>" + long + "</title><a href=\"rel\">" + long + "</a><a href=\"https://example.test/short\">" + long + "</a>"
	doc, err := Extract(strings.NewReader(page), base)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Title) > MaxTitleBytes+100 || !strings.Contains(doc.Title, "truncated") {
		t.Errorf("title of %d bytes kept: %.80q", len(doc.Title), doc.Title)
	}
	if len(doc.Links) != 1 || doc.Links[0].URL != "https://example.test/short" {
		t.Fatalf("want only the short link, got %d links", len(doc.Links))
	}
	if len(doc.Links[0].Text) > MaxLinkTextBytes+100 {
		t.Errorf("link text of %d bytes kept", len(doc.Links[0].Text))
	}
}
