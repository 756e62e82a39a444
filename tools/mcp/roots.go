//lint:file-ignore SA1019 SEP-2577 deprecates roots as of protocol 2026-07-28, yet the official filesystem server takes its directories from them and Claude Code answers roots/list: they stay functional for the deprecation window.

package mcp

import (
	"net/url"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// workspace is the directory the server works for: the worker's default
// workspace, else its configuration file's directory. A stdio server
// starts there (unless its cwd says otherwise) and is confined with it.
func (s *server) workspace() string {
	if s.m.opts.WorkDir != "" {
		return s.m.opts.WorkDir
	}
	return s.cfg.Dir
}

// offerRoots answers the server's roots/list, as Claude Code answers it
// with the directory it was launched in: the workspace. A filesystem
// server given no directory in its arguments works there (it had none to
// serve), and one given others is held to it, as under Claude Code.
func (s *server) offerRoots(client *sdk.Client) {
	dir := s.workspace()
	if dir == "" {
		return
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}
	client.AddRoots(&sdk.Root{URI: u.String(), Name: filepath.Base(dir)})
}

// withRoots adds the roots capability to caps, without listChanged: the
// workspace is the server's for its life.
func withRoots(caps *sdk.ClientCapabilities) *sdk.ClientCapabilities {
	caps.RootsV2 = &sdk.RootCapabilities{}
	return caps
}
