// Package sessions keeps conversations' Claude Code sessions (the
// ConversationSession workflow) informed of their runs without a server
// round trip per run: a per-worker cache remembers which conversations
// this worker recently touched, and only a missing or stale entry asks
// the session workflow (Update-With-Start), whose answer says whether
// SessionStart must fire.
package sessions

import (
	"sync"
	"time"
)

// DefaultCacheSize bounds the cache; past it, stale entries go first.
const DefaultCacheSize = 10000

// Cache remembers when this worker last touched each conversation's
// session. An entry is fresh for Refresh: a session touched that recently
// has started and is not idle, so a run within it needs no round trip.
// Refresh must be well under the session idle timeout; the session then
// ends between idle-Refresh and idle after the conversation's last run.
type Cache struct {
	Refresh time.Duration
	Size    int

	mu      sync.Mutex
	touched map[string]cacheEntry
}

// cacheEntry is one conversation's last touch and the session
// environment known then.
type cacheEntry struct {
	at  time.Time
	env string
}

// NewCache returns a cache whose entries stay fresh for refresh.
func NewCache(refresh time.Duration) *Cache {
	return &Cache{Refresh: refresh, Size: DefaultCacheSize, touched: map[string]cacheEntry{}}
}

// RefreshFor is the freshness window for a session idle timeout: a tenth
// of it, at most a minute.
func RefreshFor(idle time.Duration) time.Duration {
	return min(idle/10, time.Minute)
}

// Fresh reports whether the conversation was touched within Refresh of
// now, and the session environment known then.
func (c *Cache) Fresh(conversationID string, now time.Time) (env string, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.touched[conversationID]
	if !ok || now.Sub(e.at) >= c.Refresh || now.Before(e.at) {
		return "", false
	}
	return e.env, true
}

// Mark records a touch the session workflow acknowledged at now, with the
// session environment it answered.
func (c *Cache) Mark(conversationID string, now time.Time, env string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.touched == nil {
		c.touched = map[string]cacheEntry{}
	}
	if _, ok := c.touched[conversationID]; !ok && c.Size > 0 && len(c.touched) >= c.Size {
		for id, e := range c.touched {
			if now.Sub(e.at) >= c.Refresh {
				delete(c.touched, id)
			}
		}
		if len(c.touched) >= c.Size {
			clear(c.touched)
		}
	}
	c.touched[conversationID] = cacheEntry{at: now, env: env}
}

// SetEnv records the session environment this worker's run reported,
// keeping the entry's freshness.
func (c *Cache) SetEnv(conversationID, env string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.touched[conversationID]; ok {
		e.env = env
		c.touched[conversationID] = e
	}
}

// Forget drops a conversation (its session was ended through this worker).
func (c *Cache) Forget(conversationID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.touched, conversationID)
}

// Len is the number of remembered conversations.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.touched)
}
