package contract

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable escapes what would let a string show something other than
// itself to a person: control characters (a terminal's escape sequences
// can erase, move or recolour what the operator reads, a newline can
// forge a row of the listing), bidirectional overrides and isolates
// (they reorder the text around them), zero-width and other format
// characters, line and paragraph separators, and invalid UTF-8. Each
// becomes a \uXXXX (\xHH for a byte that is not UTF-8), so two different
// strings never look alike for these reasons.
//
// Call IDs, argument keys and the arguments themselves are an agent's
// (a model's) words; everything the inbox shows goes through this.
func Printable(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if hidden(r) {
			return true
		}
	}
	return false
}

// hidden reports a rune that does not show as itself: C0 and C1
// controls, DEL, format characters (Cf: bidi controls, zero-width
// characters, the BOM, soft hyphen) and the line and paragraph
// separators.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}
