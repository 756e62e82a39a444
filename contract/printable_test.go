package contract

import "testing"

func TestPrintableEscapesWhatWouldNotShowAsItself(t *testing.T) {
	for in, want := range map[string]string{
		"call-1":                "call-1",
		"a\u2066b\u2028c\ufeff": `a\u2066b\u2028c\ufeff`,
		"x\x1b[2K\rok\n":        `x\u001b[2K\u000dok\u000a`,
		"bad\xff":               `bad\xff`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %s, want %s", in, got, want)
		}
	}
}
