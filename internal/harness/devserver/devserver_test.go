package devserver

import (
	"path/filepath"
	"testing"
)

func TestBinDirFromGoEnv(t *testing.T) {
	sep := string(filepath.ListSeparator)
	for _, tc := range []struct {
		name, out, want string
		wantErr         bool
	}{
		{name: "GOBIN unset", out: "\n/root/go\n", want: "/root/go/bin"},
		{name: "GOBIN set", out: "/opt/gobin\n/root/go\n", want: "/opt/gobin"},
		{name: "GOPATH list", out: "\n/a/go" + sep + "/b/go\n", want: "/a/go/bin"},
		{name: "neither", out: "\n\n", wantErr: true},
		{name: "one line", out: "/root/go", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := binDirFromGoEnv(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("binDirFromGoEnv(%q) error = %v, want error %v", tc.out, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("binDirFromGoEnv(%q) = %q, want %q", tc.out, got, tc.want)
			}
		})
	}
}
