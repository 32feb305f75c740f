package httpauth

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"net/http"
	"sync"
	"time"
)

// Cookie names: __Host- makes the browser refuse the cookie unless it is
// Secure, host-only and on path /, so a sibling subdomain cannot plant it;
// __Secure- (Secure, host-only as set) where a proxy serves the listener
// under a path.
const (
	cookieName           = "hookbus-session"
	secureCookieName     = "__Host-hookbus-session"
	securePathCookieName = "__Secure-hookbus-session"
)

// DefaultSessionTTL is how long a login lasts (Config.SessionTTL,
// --session-ttl).
const DefaultSessionTTL = time.Hour

// sessions are the page's logins, kept in this process's memory: a cookie
// carries a random session id (256 bits), and only the ids' SHA-256 are
// kept, each with its holder's name and expiry. Signing out deletes the
// session, so its cookie is refused from then on, wherever it was copied
// to; a restart signs everyone out.
type sessions struct {
	ttl  time.Duration
	path string

	mu   sync.Mutex
	live map[[sha256.Size]byte]session
}

// session is one login.
type session struct {
	name    string
	expires time.Time
}

func newSessions(ttl time.Duration, path string) (*sessions, error) {
	return &sessions{ttl: ttl, path: cmp.Or(path, "/"), live: map[[sha256.Size]byte]session{}}, nil
}

// issue starts a session for name and returns its cookie, Secure when
// secure.
func (s *sessions) issue(name string, secure bool, now time.Time) *http.Cookie {
	id := rand.Text() + rand.Text() // 2 × 128 bits
	exp := now.Add(s.ttl)
	s.mu.Lock()
	s.purge(now)
	s.live[sha256.Sum256([]byte(id))] = session{name: name, expires: exp}
	s.mu.Unlock()
	return s.cookie(id, secure, exp)
}

// purge drops expired sessions (s.mu held).
func (s *sessions) purge(now time.Time) {
	for k, v := range s.live {
		if !now.Before(v.expires) {
			delete(s.live, k)
		}
	}
}

// revoke ends the session of r's cookie, if any, and returns the cookie
// that clears it.
func (s *sessions) revoke(r *http.Request, secure bool) (name string, c *http.Cookie) {
	if k, ok := s.key(r, secure); ok {
		s.mu.Lock()
		name = s.live[k].name
		delete(s.live, k)
		s.mu.Unlock()
	}
	c = s.cookie("", secure, time.Unix(1, 0))
	c.MaxAge = -1
	return name, c
}

// name is the cookie's name over https (secure) or not.
func (s *sessions) name(secure bool) string {
	switch {
	case !secure:
		return cookieName
	case s.path == "/":
		return secureCookieName
	default:
		return securePathCookieName
	}
}

func (s *sessions) cookie(value string, secure bool, exp time.Time) *http.Cookie {
	return &http.Cookie{Name: s.name(secure), Value: value, Path: s.path, Expires: exp, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// key is the session key of r's cookie.
func (s *sessions) key(r *http.Request, secure bool) ([sha256.Size]byte, bool) {
	c, err := r.Cookie(s.name(secure))
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	if c.Value == "" {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256([]byte(c.Value)), true
}

// check returns the name a request's cookie signs in; false when it has
// none, or one whose session this process did not start, was signed out
// or has expired.
func (s *sessions) check(r *http.Request, secure bool, now time.Time) (string, bool) {
	k, ok := s.key(r, secure)
	if !ok {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.live[k]
	if !ok {
		return "", false
	}
	if !now.Before(v.expires) {
		delete(s.live, k)
		return "", false
	}
	return v.name, true
}
