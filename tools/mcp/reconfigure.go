package mcp

import (
	"reflect"
	"time"
)

// Reconfiguration says what Reconfigure did, by server name.
type Reconfiguration struct {
	// Started were not configured before; Restarted were, differently;
	// Stopped are no longer configured (or are now kept out by the
	// rules); Kept run on, untouched.
	Started, Restarted, Stopped, Kept []string
	// Refused says, for each server the rules keep out, which setting did.
	Refused []string
}

// Changed reports whether any server started, restarted or stopped.
func (r Reconfiguration) Changed() bool {
	return len(r.Started)+len(r.Restarted)+len(r.Stopped) > 0
}

// Reconfigure makes configs, under rules, the servers the manager runs:
// the operator's reload of .mcp.json and of the settings that approve or
// keep out servers. A server whose configuration is unchanged runs on,
// its session and calls untouched; one no longer configured is stopped
// (a call in flight on it ends with the session); a new or changed one is
// started, and Reconfigure waits up to wait for its first attempt. On an
// error (a server configured twice) nothing changes.
func (m *Manager) Reconfigure(configs []ServerConfig, rules ServerRules, wait time.Duration) (Reconfiguration, error) {
	if wait <= 0 {
		wait = DefaultStartWait
	}
	m.mu.Lock()
	running := m.current()
	next, err := m.newSet(configs, rules, running)
	if err != nil {
		m.mu.Unlock()
		return Reconfiguration{}, err
	}
	var r Reconfiguration
	var fresh []string
	for _, name := range next.order {
		s := next.servers[name]
		old, was := running.servers[name]
		switch {
		case was && old == s:
			r.Kept = append(r.Kept, name)
			continue
		case was:
			r.Restarted = append(r.Restarted, name)
		default:
			r.Started = append(r.Started, name)
		}
		fresh = append(fresh, name)
	}
	for _, name := range running.order {
		if s, ok := next.servers[name]; !ok {
			r.Stopped = append(r.Stopped, name)
		} else if s == running.servers[name] {
			continue
		}
		running.servers[name].end()
	}
	m.set.Store(next)
	if m.ctx != nil {
		for _, name := range fresh {
			m.run(next.servers[name])
		}
	}
	started := m.ctx != nil
	m.mu.Unlock()
	r.Refused = m.Refused()
	if started {
		m.waitFirstAttempts(next, fresh, wait)
	}
	return r, nil
}

// equal reports whether two configurations start the same server.
func (c ServerConfig) equal(o ServerConfig) bool { return reflect.DeepEqual(c, o) }

// end stops the server's connection loop and closes its session.
func (s *server) end() {
	if s.stop != nil {
		s.stop()
	}
	s.close()
}
