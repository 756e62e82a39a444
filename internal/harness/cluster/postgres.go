package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Postgres is the PostgreSQL server the cluster runs on, reached with a
// role that may create databases (FENIX_TEST_POSTGRES_DSN in tests).
type Postgres struct {
	dsn      *url.URL
	Host     string
	Port     int
	User     string
	Password string
}

// ErrNoCreateDB means the role cannot create the cluster's databases.
var ErrNoCreateDB = errors.New("the PostgreSQL role cannot create databases")

// OpenPostgres parses dsn and checks that its role may create databases.
func OpenPostgres(ctx context.Context, dsn string) (*Postgres, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL DSN: %w", err)
	}
	host, portText, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, portText = u.Host, "5432"
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL DSN port %q: %w", portText, err)
	}
	pw, _ := u.User.Password()
	pg := &Postgres{dsn: u, Host: host, Port: port, User: u.User.Username(), Password: pw}
	conn, err := pg.connect(ctx, "")
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	var canCreate bool
	if err := conn.QueryRow(ctx, `SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&canCreate); err != nil {
		return nil, fmt.Errorf("PostgreSQL: checking CREATEDB: %w", err)
	}
	if !canCreate {
		return nil, fmt.Errorf("%w: ALTER ROLE %s CREATEDB (as .ci/run does)", ErrNoCreateDB, pg.User)
	}
	return pg, nil
}

// DSN is a URL for database db, at addr (host:port) when given, else at
// the server's own address.
func (p *Postgres) DSN(db, addr string) string {
	u := *p.dsn
	u.Path = "/" + db
	if addr != "" {
		u.Host = addr
	}
	return u.String()
}

// Addr is the server's host:port.
func (p *Postgres) Addr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.Port)) }

func (p *Postgres) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	dsn := p.dsn.String()
	if db != "" {
		dsn = p.DSN(db, "")
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL at %s: %w", p.Addr(), err)
	}
	return conn, nil
}

// CreateDatabase creates db owned by the cluster's role.
func (p *Postgres) CreateDatabase(ctx context.Context, db string) error {
	conn, err := p.connect(ctx, "")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	return err
}

// DropDatabases drops the databases, disconnecting their sessions.
func (p *Postgres) DropDatabases(ctx context.Context, dbs ...string) error {
	conn, err := p.connect(ctx, "")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var errs []error
	for _, db := range dbs {
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop database %s: %w", db, err))
		}
	}
	return errors.Join(errs...)
}

// DatabasesWithPrefix lists databases whose name starts with prefix.
func (p *Postgres) DatabasesWithPrefix(ctx context.Context, prefix string) ([]string, error) {
	conn, err := p.connect(ctx, "")
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, prefix)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := names[:0]
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out, nil
}
