package httpauth

import (
	"html/template"
	"net/http"
	"time"
)

// Paths of the login form (Config.Login), relative to the listener's root.
const (
	LoginPath  = "/login"
	LogoutPath = "/logout"
)

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hookbus: sign in</title>
<link rel="icon" href="data:,">
<style>
body { font: 15px/1.5 system-ui, sans-serif; max-width: 26rem; margin: 12vh auto; padding: 0 1rem; color: #1d2430; }
input, button { font: inherit; padding: .45rem .6rem; }
input { width: 100%; box-sizing: border-box; margin: .4rem 0 .8rem; }
.bad { color: #b3261e; }
</style>
</head>
<body>
<main>
<h1>hookbus</h1>
<p>Sign in with a token of the server's token file. What you answer on the page is recorded under the token's name.</p>
{{if .}}<p class="bad" role="alert">{{.}}</p>{{end}}
<form method="post" action="login">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
</main>
</body>
</html>
`))

// login serves the form (GET) and signs in with a token (POST): a cookie,
// then back to the page.
func (g *Guard) login(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		g.loginForm(w, http.StatusOK, "")
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		tok, ok := g.cfg.Tokens.Lookup(r.PostFormValue("token"))
		if !ok {
			g.log.Warn("httpauth: sign-in refused: not a token of the token file", "listener", g.cfg.Name, "peer", r.RemoteAddr)
			g.loginForm(w, http.StatusUnauthorized, "That is not a token of this server.")
			return
		}
		http.SetCookie(w, g.sessions.issue(tok.Name, g.secure(r), time.Now()))
		g.log.Info("httpauth: signed in", "listener", g.cfg.Name, "name", tok.Name, "peer", r.RemoteAddr)
		seeOther(w, "./")
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		g.refuse(w, http.StatusMethodNotAllowed, "use GET or POST on "+LoginPath)
	}
}

func (g *Guard) loginForm(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = loginPage.Execute(w, msg)
}

// logout ends the session of the request's cookie, here, so that the
// cookie is refused from then on wherever it was copied, and clears it in
// the browser (POST only: a link cannot sign anyone out).
func (g *Guard) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		g.refuse(w, http.StatusMethodNotAllowed, "sign out with POST "+LogoutPath)
		return
	}
	name, c := g.sessions.revoke(r, g.secure(r))
	if name != "" {
		g.log.Info("httpauth: signed out", "listener", g.cfg.Name, "name", name, "peer", r.RemoteAddr)
	}
	http.SetCookie(w, c)
	seeOther(w, "login")
}

// seeOther redirects to a location relative to the request's, so that a
// page a proxy serves under a path prefix stays under it.
func seeOther(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}
