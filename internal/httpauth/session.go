package httpauth

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Cookie names: __Host- makes the browser refuse the cookie unless it is
// Secure, host-only and on path /, so a sibling subdomain cannot plant it.
const (
	cookieName       = "hookbus-session"
	secureCookieName = "__Host-hookbus-session"
)

// DefaultSessionTTL is how long a login lasts (Config.SessionTTL).
const DefaultSessionTTL = 12 * time.Hour

// sessions signs and checks the page's login cookies: the holder's name
// and an expiry, with an HMAC-SHA256 under a key derived (HKDF-SHA256)
// from a secret drawn when the process starts.
type sessions struct {
	key []byte
	ttl time.Duration
}

func newSessions(ttl time.Duration) (*sessions, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	key, err := hkdf.Key(sha256.New, secret, nil, "hookbus session cookie v1", 32)
	if err != nil {
		return nil, err
	}
	return &sessions{key: key, ttl: ttl}, nil
}

// claims is what a cookie says.
type claims struct {
	Name    string `json:"n"`
	Expires int64  `json:"x"` // unix seconds
}

func (s *sessions) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// issue returns the cookie that signs name in, Secure when secure.
func (s *sessions) issue(name string, secure bool, now time.Time) *http.Cookie {
	exp := now.Add(s.ttl)
	raw, _ := json.Marshal(claims{Name: name, Expires: exp.Unix()})
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return s.cookie(payload+"."+base64.RawURLEncoding.EncodeToString(s.mac(payload)), secure, exp)
}

// clear returns the cookie that signs out.
func (s *sessions) clear(secure bool) *http.Cookie {
	c := s.cookie("", secure, time.Unix(1, 0))
	c.MaxAge = -1
	return c
}

func (s *sessions) cookie(value string, secure bool, exp time.Time) *http.Cookie {
	name := cookieName
	if secure {
		name = secureCookieName
	}
	return &http.Cookie{Name: name, Value: value, Path: "/", Expires: exp, HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// check returns the name a request's cookie signs in; false when it has
// none, or one that is not signed by this process or has expired.
func (s *sessions) check(r *http.Request, secure bool, now time.Time) (string, bool) {
	name := cookieName
	if secure {
		name = secureCookieName
	}
	c, err := r.Cookie(name)
	if err != nil {
		return "", false
	}
	payload, sig, ok := strings.Cut(c.Value, ".")
	if !ok {
		return "", false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(payload)) {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "", false
	}
	var cl claims
	if json.Unmarshal(raw, &cl) != nil || cl.Name == "" || now.Unix() >= cl.Expires {
		return "", false
	}
	return cl.Name, true
}
