// Package pki issues the certificates of a production stack's mutual TLS:
// one certificate authority, the Temporal server's certificate (frontend
// and internode) and one client certificate per party that may talk to
// the frontend — the workers, the operator (starter, CLI, init job) and
// the Web UI. The point is the guard: on a frontend without client
// authentication any process on the network, an agent's command
// included, can send decide_permission for its own parked call; with it,
// only the holders of a key can, and the workers hide theirs from
// commands.
//
// Ensure is idempotent, so a compose job can run it on every start: what
// exists and is still good is kept, the rest is issued.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The files of every identity directory, and the CA's.
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
	caDir    = "ca"
	caKey    = "ca-key.pem"
)

// Identity is one party with a directory of its own under Options.Dir,
// holding the CA certificate, its certificate and its key: each service
// mounts only its own directory.
type Identity struct {
	// Dir names the directory and the certificate's common name.
	Dir        string
	CommonName string
	// Server certificates serve TLS (and, for Temporal's internode
	// traffic, also act as clients); the others are clients only.
	Server bool
}

// Identities are the parties of the stack docker-compose.yml runs.
var Identities = []Identity{
	{Dir: "server", CommonName: "temporal", Server: true},
	{Dir: "worker", CommonName: "fenix-worker"},
	{Dir: "operator", CommonName: "fenix-operator"},
	{Dir: "ui", CommonName: "temporal-ui"},
}

// DefaultServerNames are the names a client may dial the frontend by in
// the compose stack: its service name, and the host's published port.
var DefaultServerNames = []string{"temporal", "localhost", "127.0.0.1"}

// Options configures Ensure.
type Options struct {
	Dir string
	// ServerNames are the DNS names and IP addresses the server
	// certificate covers (default DefaultServerNames).
	ServerNames []string
	// Owners gives an identity's key to a user ID, readable by it alone
	// (mode 0400): the workers', so commands run as another user cannot
	// read it. Other keys are mode 0444 in a directory only their own
	// service mounts; Dir itself is mode 0700.
	Owners map[string]int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Lifetimes. A leaf with less than renewBefore left is issued again.
const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 397 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// Ensure makes Dir hold a CA and a certificate for every identity, keeping
// what is valid for at least 30 more days, signed by the CA and (for the
// server) covering every server name. It returns one line per file set it
// wrote or kept.
func Ensure(opts Options) ([]string, error) {
	if opts.Dir == "" {
		return nil, errors.New("pki: no directory given")
	}
	if len(opts.ServerNames) == 0 {
		opts.ServerNames = DefaultServerNames
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	ca, created, err := loadOrCreateCA(filepath.Join(opts.Dir, caDir), opts.Now())
	if err != nil {
		return nil, err
	}
	var report []string
	if created {
		report = append(report, "created the certificate authority "+filepath.Join(opts.Dir, caDir, CAFile))
	}
	for _, id := range Identities {
		dir := filepath.Join(opts.Dir, id.Dir)
		names := []string(nil)
		if id.Server {
			names = opts.ServerNames
		}
		why := "new certificate authority"
		if !created {
			if why = whyIssueAgain(dir, ca, names, opts.Now()); why == "" {
				report = append(report, "kept "+dir)
				continue
			}
		}
		uid, owned := opts.Owners[id.Dir]
		if err := ca.issue(dir, id, names, opts.Now(), uid, owned); err != nil {
			return nil, fmt.Errorf("pki: %s: %w", dir, err)
		}
		report = append(report, "issued "+dir+" ("+id.CommonName+"; "+why+")")
	}
	return report, nil
}

// authority is a loaded CA.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func loadOrCreateCA(dir string, now time.Time) (*authority, bool, error) {
	certPEM, certErr := os.ReadFile(filepath.Join(dir, CAFile))
	keyPEM, keyErr := os.ReadFile(filepath.Join(dir, caKey))
	if certErr == nil && keyErr == nil {
		ca, err := parseAuthority(certPEM, keyPEM)
		if err != nil {
			return nil, false, fmt.Errorf("pki: the certificate authority in %s: %w (remove the directory to start over; every certificate is issued again)", dir, err)
		}
		if now.Add(renewBefore).After(ca.cert.NotAfter) {
			return nil, false, fmt.Errorf("pki: the certificate authority in %s expires on %s: remove the directory to issue a new one and every certificate again", dir, ca.cert.NotAfter.Format(time.DateOnly))
		}
		return ca, false, nil
	}
	if !errors.Is(certErr, os.ErrNotExist) || !errors.Is(keyErr, os.ErrNotExist) {
		return nil, false, fmt.Errorf("pki: %s holds half a certificate authority (%v; %v): remove it to start over", dir, certErr, keyErr)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "Fenix stack CA", Organization: []string{"Fenix"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caLifetime),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, false, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, false, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	if err := writeFile(filepath.Join(dir, caKey), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o400, 0, false); err != nil {
		return nil, false, err
	}
	if err := writeFile(filepath.Join(dir, CAFile), certPEM, 0o444, 0, false); err != nil {
		return nil, false, err
	}
	ca, err := parseAuthority(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return ca, true, err
}

func parseAuthority(certPEM, keyPEM []byte) (*authority, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("the key is not PEM")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the key does not belong to the certificate")
	}
	return &authority{cert: cert, key: key, pem: certPEM}, nil
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// whyIssueAgain says why dir's certificate must be issued again ("" when
// it need not): missing, not signed by ca, expiring, or missing a name.
func whyIssueAgain(dir string, ca *authority, names []string, now time.Time) string {
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		return err.Error()
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err != nil {
		return err.Error()
	}
	if caPEM, err := os.ReadFile(filepath.Join(dir, CAFile)); err != nil || string(caPEM) != string(ca.pem) {
		return "another CA"
	}
	cert, err := parseCert(certPEM)
	if err != nil {
		return err.Error()
	}
	if err := cert.CheckSignatureFrom(ca.cert); err != nil {
		return err.Error()
	}
	if now.Add(renewBefore).After(cert.NotAfter) {
		return "expiring"
	}
	for _, n := range names {
		if err := cert.VerifyHostname(n); err != nil {
			return err.Error()
		}
	}
	return ""
}

func (ca *authority) issue(dir string, id Identity, names []string, now time.Time, uid int, owned bool) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: id.CommonName, Organization: []string{"Fenix"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(leafLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if id.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else if !slices.Contains(tmpl.DNSNames, n) {
				tmpl.DNSNames = append(tmpl.DNSNames, n)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o444)
	if owned {
		mode = 0o400
	}
	if err := writeFile(filepath.Join(dir, KeyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), mode, uid, owned); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o444, 0, false); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, CAFile), ca.pem, 0o444, 0, false)
}

// writeFile replaces path atomically with data, mode, and (when chown)
// owner uid: a service restarting meanwhile reads the old file or the
// new, never half of one.
func writeFile(path string, data []byte, mode os.FileMode, uid int, chown bool) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if chown {
		if err := tmp.Chown(uid, -1); err != nil {
			tmp.Close()
			return fmt.Errorf("give %s to user %d: %w", path, uid, err)
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

// ClientTLS is the TLS configuration of a client holding the identity in
// dir (Options.Dir/<Identity.Dir>), dialing the server as serverName.
func ClientTLS(dir, serverName string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", dir, err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("pki: %s holds no certificate", filepath.Join(dir, CAFile))
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}, nil
}
