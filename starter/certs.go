package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenixrt/fenix/internal/pki"
)

// cmdCerts issues the mutual-TLS certificates of the compose stack
// (docker-compose.yml's certs job runs it on every start): a CA, the
// Temporal server's certificate and the workers', the operator's and the
// Web UI's client certificates, one directory each.
func cmdCerts(_ context.Context, c *cli, args []string) (int, error) {
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	dir := fs.String("dir", "", "directory to hold the CA and one directory per identity (server, worker, operator, ui)")
	names := fs.String("server-names", strings.Join(pki.DefaultServerNames, ","), "comma-separated DNS names and IP addresses clients dial the frontend by")
	var owners ownerFlag
	fs.Var(&owners, "owner", "IDENTITY=UID: that identity's key is readable by UID alone (repeatable)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *dir == "" {
		return exitUsage, usageError{"expected -dir DIR"}
	}
	var serverNames []string
	for _, n := range strings.Split(*names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			serverNames = append(serverNames, n)
		}
	}
	report, err := pki.Ensure(pki.Options{Dir: *dir, ServerNames: serverNames, Owners: owners})
	for _, line := range report {
		fmt.Fprintln(c.stdout, line)
	}
	if err != nil {
		return exitFailed, err
	}
	return exitOK, nil
}

// ownerFlag collects -owner IDENTITY=UID.
type ownerFlag map[string]int

func (o *ownerFlag) String() string { return fmt.Sprint(map[string]int(*o)) }

func (o *ownerFlag) Set(v string) error {
	id, uidText, ok := strings.Cut(v, "=")
	uid, err := strconv.Atoi(uidText)
	if !ok || err != nil || uid < 0 {
		return fmt.Errorf("-owner %q: want IDENTITY=UID, such as worker=10001", v)
	}
	known := false
	for _, i := range pki.Identities {
		known = known || i.Dir == id
	}
	if !known {
		return fmt.Errorf("-owner %q: no identity %q (server, worker, operator, ui)", v, id)
	}
	if *o == nil {
		*o = ownerFlag{}
	}
	(*o)[id] = uid
	return nil
}
