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
