package composecheck

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/fenixrt/fenix/internal/pki"
)

// tlsDir is where the certs job writes the stack's certificates (one
// directory per pki.Identity), relative to the repository.
const tlsDir = "deploy/tls"

// clientIdentity is the certificate each service that talks to the
// frontend holds.
var clientIdentity = map[string]string{
	"worker": "worker", "worker-a": "worker", "worker-b": "worker",
	"starter": "operator", "temporal-init": "operator", "ui": "ui",
}

// TestEveryPartyHoldsOnlyItsOwnKey: the frontend and its internode
// traffic require a certificate of the stack's CA; every service that
// talks to the frontend mounts its own identity's directory, read-only,
// and names the files there; no service but the certs job sees another
// party's key; the certs job gives the workers' key to the image's user.
func TestEveryPartyHoldsOnlyItsOwnKey(t *testing.T) {
	root := repoRoot(t)
	p := load(t, nil, "*")
	identities := map[string]bool{}
	for _, id := range pki.Identities {
		identities[id.Dir] = true
	}
	tlsRoot := filepath.Join(root, tlsDir)

	for _, name := range sortedKeys(p.Services) {
		s := p.Services[name]
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind || (v.Source != tlsRoot && !strings.HasPrefix(v.Source, tlsRoot+"/")) {
				continue
			}
			if name == "certs" {
				continue
			}
			id := strings.TrimPrefix(v.Source, tlsRoot+"/")
			switch want, talks := clientIdentity[name]; {
			case name == "temporal" && id == "server":
			case talks && id == want:
			default:
				t.Errorf("%s mounts %s: not its own identity", name, v.Source)
			}
			if !v.ReadOnly {
				t.Errorf("%s mounts its certificate directory %s read-write", name, v.Source)
			}
		}
	}

	certs := service(t, p, "certs")
	if !slices.Contains(certs.Entrypoint, "certs") || !slices.Contains(certs.Entrypoint, "worker=10001") {
		t.Errorf("certs job runs %q: want fenix-starter certs giving the workers' key to uid 10001 (the image's USER)", certs.Entrypoint)
	}
	if len(certs.Volumes) != 1 || certs.Volumes[0].Source != tlsRoot || certs.Volumes[0].ReadOnly {
		t.Errorf("certs job mounts %v, want %s writable and nothing else", certs.Volumes, tlsRoot)
	}

	temporal := service(t, p, "temporal")
	want := map[string]string{
		"TEMPORAL_TLS_REQUIRE_CLIENT_AUTH": "true",
		"TEMPORAL_TLS_FRONTEND_CERT":       "/etc/temporal/tls/" + pki.CertFile,
		"TEMPORAL_TLS_FRONTEND_KEY":        "/etc/temporal/tls/" + pki.KeyFile,
		"TEMPORAL_TLS_CLIENT1_CA_CERT":     "/etc/temporal/tls/" + pki.CAFile,
		// The template lists CLIENT2 whenever CLIENT1 is set: empty, the
		// server would read a file named "".
		"TEMPORAL_TLS_CLIENT2_CA_CERT": "/etc/temporal/tls/" + pki.CAFile,
		"TEMPORAL_TLS_SERVER_CERT":     "/etc/temporal/tls/" + pki.CertFile,
		"TEMPORAL_TLS_SERVER_KEY":      "/etc/temporal/tls/" + pki.KeyFile,
		"TEMPORAL_TLS_SERVER_CA_CERT":  "/etc/temporal/tls/" + pki.CAFile,
	}
	for k, v := range want {
		if got, _ := env(temporal, k); got != v {
			t.Errorf("temporal: %s = %q, want %q", k, got, v)
		}
	}

	for name := range clientIdentity {
		s := service(t, p, name)
		names := []string{"TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_PATH"}
		if name == "ui" {
			names = []string{"TEMPORAL_TLS_CERT", "TEMPORAL_TLS_KEY", "TEMPORAL_TLS_CA"}
		}
		for _, k := range names {
			v, ok := env(s, k)
			if !ok {
				t.Errorf("%s: no %s", name, k)
				continue
			}
			if _, ok := hostPath(s, v, filepath.Join(tlsRoot, clientIdentity[name])); !ok {
				t.Errorf("%s: %s=%s is not in its mounted %s", name, k, v, filepath.Join(tlsDir, clientIdentity[name]))
			}
		}
		if v, _ := env(s, "TEMPORAL_TLS_SERVER_NAME"); !slices.Contains(pki.DefaultServerNames, v) {
			t.Errorf("%s: TEMPORAL_TLS_SERVER_NAME = %q, not a name of the server's certificate %v", name, v, pki.DefaultServerNames)
		}
	}
}

// TestTheUIIsOutOfTheWorkersReach: the Web UI acts on the frontend with
// its own certificate for whoever reaches it, so it shares a network with
// the server alone, not with the workers whose commands the agent writes.
func TestTheUIIsOutOfTheWorkersReach(t *testing.T) {
	p := load(t, nil, "*")
	ui := service(t, p, "ui")
	for network := range ui.Networks {
		for _, name := range sortedKeys(p.Services) {
			if name == "ui" || name == "temporal" {
				continue
			}
			s := p.Services[name]
			_, on := s.Networks[network]
			if on || (network == "default" && len(s.Networks) == 0) {
				t.Errorf("%s shares network %q with the Web UI", name, network)
			}
		}
	}
	if _, ok := service(t, p, "temporal").Networks["default"]; !ok {
		t.Error("temporal is not on the default network the workers use")
	}
}

// hostPath maps containerPath through s's bind mounts and reports whether
// it lands under dir.
func hostPath(s types.ServiceConfig, containerPath, dir string) (string, bool) {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && strings.HasPrefix(containerPath, v.Target+"/") {
			host := filepath.Join(v.Source, strings.TrimPrefix(containerPath, v.Target))
			return host, strings.HasPrefix(host, dir+"/")
		}
	}
	return "", false
}
