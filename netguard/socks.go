package netguard

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// SOCKS5 (RFC 1928) constants the server uses.
const (
	socksVersion        = 5
	socksNoAuth         = 0
	socksUserPass       = 2 // RFC 1929
	socksUserPassOK     = 0
	socksNoAcceptable   = 0xff
	socksConnect        = 1
	socksAddrIPv4       = 1
	socksAddrDomain     = 3
	socksAddrIPv6       = 4
	socksSucceeded      = 0
	socksNotAllowed     = 2
	socksHostUnreach    = 4
	socksRefused        = 5
	socksCmdUnsupported = 7
	socksAddrUnsupport  = 8
)

// socksHandshakeTimeout bounds a client's greeting and request.
const socksHandshakeTimeout = 30 * time.Second

// ServeSOCKS5 serves SOCKS5 CONNECT on l, dialing through dial, until l
// is closed. Clients that send host names (socks5h://) leave resolution
// to dial, so the decision is on the name; refusals are answered
// "connection not allowed by ruleset" and handed to onRefused when it is
// set. Clients authenticate with nothing, or, where identify is set, a
// user name and password (RFC 1929) that identify maps to the Asker the
// dial gets (see WithAsker).
func ServeSOCKS5(l net.Listener, dial DialFunc, onRefused func(error), identify Identify) {
	go func() {
		backoff := 5 * time.Millisecond
		for {
			conn, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				// Out of file descriptors and the like: wait and go on, as
				// net/http's server does, rather than stop serving.
				time.Sleep(backoff)
				backoff = min(2*backoff, time.Second)
				continue
			}
			backoff = 5 * time.Millisecond
			go serveSOCKSConn(conn, dial, onRefused, identify)
		}
	}()
}

func serveSOCKSConn(conn net.Conn, dial DialFunc, onRefused func(error), identify Identify) {
	_ = conn.SetDeadline(time.Now().Add(socksHandshakeTimeout))
	in := bufio.NewReader(conn)
	address, user, password, err := socksRequest(in, conn, identify != nil)
	if err != nil {
		conn.Close()
		return
	}
	base := context.Background()
	if identify != nil && user != "" {
		base = WithAsker(base, identify(user, password))
		// A person may be asked: the handshake deadline is not theirs.
		_ = conn.SetDeadline(time.Time{})
	}
	ctx, cancel := context.WithTimeout(base, ProxyDialTimeout)
	upstream, err := dial(ctx, "tcp", address)
	cancel()
	if err != nil {
		code := byte(socksHostUnreach)
		switch {
		case errors.Is(err, ErrBlocked):
			code = socksNotAllowed
			if onRefused != nil {
				onRefused(refusal(err))
			}
		case errors.Is(err, syscall.ECONNREFUSED):
			code = socksRefused
		}
		_ = socksReply(conn, code)
		conn.Close()
		return
	}
	if err := socksReply(conn, socksSucceeded); err != nil {
		conn.Close()
		upstream.Close()
		return
	}
	_ = conn.SetDeadline(time.Time{})
	splice(conn, in, upstream)
}

// socksRequest reads the greeting, the credentials when userPass allows
// them and the client offers them, and the CONNECT request; it returns
// the destination as host:port. What it cannot serve is answered here.
func socksRequest(in *bufio.Reader, conn net.Conn, userPass bool) (address, user, password string, err error) {
	var head [2]byte
	if _, err := io.ReadFull(in, head[:]); err != nil {
		return "", "", "", err
	}
	if head[0] != socksVersion {
		return "", "", "", fmt.Errorf("SOCKS version %d is not 5", head[0])
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(in, methods); err != nil {
		return "", "", "", err
	}
	method := byte(socksNoAcceptable)
	for _, m := range methods {
		switch {
		case m == socksUserPass && userPass:
			method = socksUserPass
		case m == socksNoAuth && method != socksUserPass:
			method = socksNoAuth
		}
	}
	if _, err := conn.Write([]byte{socksVersion, method}); err != nil || method == socksNoAcceptable {
		return "", "", "", errors.New("the SOCKS client offers no method the proxy serves")
	}
	if method == socksUserPass {
		if user, password, err = socksCredentials(in, conn); err != nil {
			return "", "", "", err
		}
	}
	address, err = socksConnectRequest(in, conn)
	return address, user, password, err
}

// socksCredentials reads an RFC 1929 user name and password and accepts
// them (whom they name is the Asker's business).
func socksCredentials(in *bufio.Reader, conn net.Conn) (user, password string, err error) {
	version, err := in.ReadByte()
	if err != nil {
		return "", "", err
	}
	if version != 1 {
		return "", "", fmt.Errorf("SOCKS user/password version %d is not 1", version)
	}
	field := func() (string, error) {
		n, err := in.ReadByte()
		if err != nil {
			return "", err
		}
		b := make([]byte, n)
		_, err = io.ReadFull(in, b)
		return string(b), err
	}
	if user, err = field(); err != nil {
		return "", "", err
	}
	if password, err = field(); err != nil {
		return "", "", err
	}
	if _, err := conn.Write([]byte{1, socksUserPassOK}); err != nil {
		return "", "", err
	}
	return user, password, nil
}

// socksConnectRequest reads the CONNECT request.
func socksConnectRequest(in *bufio.Reader, conn net.Conn) (string, error) {
	var req [4]byte
	if _, err := io.ReadFull(in, req[:]); err != nil {
		return "", err
	}
	if req[0] != socksVersion {
		return "", fmt.Errorf("SOCKS version %d is not 5", req[0])
	}
	if req[1] != socksConnect {
		_ = socksReply(conn, socksCmdUnsupported)
		return "", fmt.Errorf("SOCKS command %d is not CONNECT", req[1])
	}
	var host string
	switch req[3] {
	case socksAddrIPv4:
		var b [4]byte
		if _, err := io.ReadFull(in, b[:]); err != nil {
			return "", err
		}
		host = netip.AddrFrom4(b).String()
	case socksAddrIPv6:
		var b [16]byte
		if _, err := io.ReadFull(in, b[:]); err != nil {
			return "", err
		}
		host = netip.AddrFrom16(b).String()
	case socksAddrDomain:
		n, err := in.ReadByte()
		if err != nil {
			return "", err
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(in, name); err != nil {
			return "", err
		}
		host = string(name)
	default:
		_ = socksReply(conn, socksAddrUnsupport)
		return "", fmt.Errorf("SOCKS address type %d is unknown", req[3])
	}
	var port [2]byte
	if _, err := io.ReadFull(in, port[:]); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(port[:])))), nil
}

// socksReply answers a request with code and an unspecified bound
// address.
func socksReply(conn net.Conn, code byte) error {
	_, err := conn.Write([]byte{socksVersion, code, 0, socksAddrIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
