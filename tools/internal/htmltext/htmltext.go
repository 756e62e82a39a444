// Package htmltext turns an HTML page into readable plain text: the title,
// the visible text with paragraphs and list items on their own lines, and
// the page's links resolved against its URL.
package htmltext

import (
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/fenixrt/fenix/contract"
)

// Link is one hyperlink of the page.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Document is the readable form of a page.
type Document struct {
	Title string
	Text  string
	Links []Link
}

// Bounds on what one page contributes besides its text: a page chooses
// its title, its link texts and (through a long base URL that every
// relative link resolves against) its link URLs, and all of them are
// repeated in the result, so each is bounded on its own.
const (
	// MaxLinks caps the links collected from one page.
	MaxLinks = 100
	// MaxTitleBytes and MaxLinkTextBytes bound the title and a link's text.
	MaxTitleBytes    = 512
	MaxLinkTextBytes = 512
	// MaxLinkURLBytes bounds a link's URL; a longer link is left out, as a
	// cut URL leads somewhere else.
	MaxLinkURLBytes = 4096
)

// skipped elements hold no readable text.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Math: true, atom.Iframe: true, atom.Object: true,
	atom.Canvas: true, atom.Select: true,
}

// lineBreaks separate items with a single newline; other blocks with a
// blank line.
var lineBreaks = map[atom.Atom]bool{
	atom.Br: true, atom.Li: true, atom.Tr: true, atom.Dt: true, atom.Dd: true, atom.Option: true,
}

// blocks start and end on their own line.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Br: true, atom.Dd: true, atom.Details: true, atom.Dialog: true, atom.Div: true,
	atom.Dl: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true,
	atom.Footer: true, atom.Form: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Header: true, atom.Hr: true,
	atom.Li: true, atom.Main: true, atom.Nav: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true,
	atom.Tr: true, atom.Ul: true, atom.Title: true, atom.Caption: true,
}

// Extract reads HTML from r (UTF-8) and returns its readable form. base
// resolves relative links; it may be nil.
func Extract(r io.Reader, base *url.URL) (Document, error) {
	z := html.NewTokenizer(r)
	var (
		doc       Document
		out       textBuilder
		skipDepth int
		skipTag   atom.Atom
		inTitle   bool
		preDepth  int
		link      *Link
		linkText  strings.Builder
		seen      = map[string]bool{}
	)
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				doc.Text = out.String()
				doc.Title = contract.TruncateText(strings.Join(strings.Fields(doc.Title), " "), MaxTitleBytes)
				return doc, nil
			}
			return doc, z.Err()
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			if skipDepth > 0 {
				if a == skipTag && tt == html.StartTagToken {
					skipDepth++
				}
				continue
			}
			if a == atom.Title {
				inTitle = tt == html.StartTagToken
				continue
			}
			if skipped[a] && tt == html.StartTagToken {
				skipDepth, skipTag = 1, a
				continue
			}
			if blocks[a] {
				out.newline(breakFor(a))
			}
			switch a {
			case atom.Li:
				out.write("- ")
			case atom.Pre:
				preDepth++
			case atom.Td, atom.Th:
				out.write(" ")
			case atom.A:
				if hasAttr && tt == html.StartTagToken {
					link = hrefOf(z, base)
					linkText.Reset()
				}
			case atom.Img:
				if hasAttr {
					if alt := attr(z, "alt"); alt != "" {
						out.write("[" + alt + "]")
					}
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if skipDepth > 0 {
				if a == skipTag {
					skipDepth--
				}
				continue
			}
			switch a {
			case atom.Title:
				inTitle = false
			case atom.Pre:
				preDepth = max(preDepth-1, 0)
			case atom.A:
				if link != nil && len(doc.Links) < MaxLinks && !seen[link.URL] && len(link.URL) <= MaxLinkURLBytes {
					seen[link.URL] = true
					link.Text = contract.TruncateText(strings.Join(strings.Fields(linkText.String()), " "), MaxLinkTextBytes)
					doc.Links = append(doc.Links, *link)
				}
				link = nil
			}
			if blocks[a] {
				out.newline(breakFor(a))
			}
		case html.TextToken:
			if skipDepth > 0 {
				continue
			}
			text := string(z.Text())
			if inTitle {
				doc.Title += text
				continue
			}
			if link != nil {
				linkText.WriteString(text)
			}
			if preDepth > 0 {
				out.writeRaw(text)
			} else {
				out.writeCollapsed(text)
			}
		}
	}
}

func attr(z *html.Tokenizer, want string) string {
	for {
		key, val, more := z.TagAttr()
		if string(key) == want {
			return string(val)
		}
		if !more {
			return ""
		}
	}
}

func hrefOf(z *html.Tokenizer, base *url.URL) *Link {
	href := strings.TrimSpace(attr(z, "href"))
	if href == "" || strings.HasPrefix(href, "#") {
		return nil
	}
	u, err := url.Parse(href)
	if err != nil {
		return nil
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil
	}
	u.Fragment = ""
	return &Link{URL: u.String()}
}

// textBuilder collapses whitespace outside <pre> and keeps at most one
// blank line between blocks.
type textBuilder struct {
	b         strings.Builder
	pendingNL int
	spaceNext bool
}

func breakFor(a atom.Atom) int {
	if lineBreaks[a] {
		return 1
	}
	return 2
}

func (t *textBuilder) newline(n int) {
	if t.b.Len() > 0 {
		t.pendingNL = max(t.pendingNL, n)
	}
	t.spaceNext = false
}

func (t *textBuilder) flush() {
	if t.pendingNL > 0 {
		t.b.WriteString(strings.Repeat("\n", t.pendingNL))
		t.pendingNL = 0
		t.spaceNext = false
	}
	if t.spaceNext {
		t.b.WriteByte(' ')
		t.spaceNext = false
	}
}

func (t *textBuilder) write(s string) {
	t.flush()
	t.b.WriteString(s)
}

func (t *textBuilder) writeRaw(s string) {
	if s == "" {
		return
	}
	t.flush()
	t.b.WriteString(s)
}

func (t *textBuilder) writeCollapsed(s string) {
	words := strings.Fields(s)
	if len(words) == 0 {
		if s != "" && t.b.Len() > 0 {
			t.spaceNext = true
		}
		return
	}
	leading := s[0] == ' ' || s[0] == '\n' || s[0] == '\t' || s[0] == '\r'
	if leading && t.b.Len() > 0 {
		t.spaceNext = true
	}
	t.flush()
	t.b.WriteString(strings.Join(words, " "))
	last := s[len(s)-1]
	t.spaceNext = last == ' ' || last == '\n' || last == '\t' || last == '\r'
}

func (t *textBuilder) String() string { return strings.TrimSpace(t.b.String()) }
