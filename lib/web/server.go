// Package web is the read-only web view of art's durable state behind
// `artobs serve` (docs/web.md): queues (through the state index and the
// log), their tasks with every attempt, output tails and agent transcripts,
// goal journals, and JSONL event sinks with a live tail over server-sent
// events. Every page has a JSON twin under /api/ holding the documents the
// CLI prints (artq status, artq log, artgoal show, artobs tail), built by
// the same library code.
//
// It writes nothing and accepts no state-changing request: every method
// but GET and HEAD is refused (405). Everything it shows is attacker text
// (task arguments, output, model replies, event bodies): pages are
// html/template with a strict Content-Security-Policy (no inline script or
// style; the one script is a static file of this binary), the Host header
// must name this server (DNS rebinding), and any non-loopback listen needs
// a token (internal/webcli).
package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/art-runtime/art/lib/web/webconf"
)

//go:embed assets
var assets embed.FS

// CookieName is the cookie a ?token=TOKEN request sets.
const CookieName = "artobs_token"

// Config is what the server reads and how it is guarded.
type Config = webconf.Config

// Server serves one Config.
type Server struct {
	cfg      Config
	tokenSum [32]byte
	mux      *http.ServeMux
	port     string // the listen port, once known (Serve)

	// heavy bounds the requests that read a whole state index or replay
	// a whole log at once (task lists, charts): memory is a few times one
	// index or one replay, whatever the number of clients.
	heavy chan struct{}
	// streams bounds the live tails open at once (MaxStreams).
	streams chan struct{}
	// charts caches each queue's chart (chartCache).
	chartMu sync.Mutex
	charts  map[string]*cachedChart
}

// HeavySlots is how many whole-index or whole-log reads run at once.
const HeavySlots = 2

// MaxStreams is how many live tails may be open at once; one more is
// refused with 503 (each polls its sink every 100 ms).
const MaxStreams = 32

// acquire takes a heavy slot, or fails when ctx ends first.
func (s *Server) acquire(ctx context.Context) (release func(), err error) {
	select {
	case s.heavy <- struct{}{}:
		return func() { <-s.heavy }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// New returns a server for cfg.
func New(cfg Config) *Server {
	s := &Server{cfg: cfg, mux: http.NewServeMux(), heavy: make(chan struct{}, HeavySlots), streams: make(chan struct{}, MaxStreams), charts: map[string]*cachedChart{}}
	if cfg.Token != "" {
		s.tokenSum = sha256.Sum256([]byte(cfg.Token))
	}
	if _, p, err := net.SplitHostPort(cfg.Listen); err == nil {
		s.port = p
	}
	s.routes()
	return s
}

// Serve accepts on ln until ctx ends, then shuts down within a second.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if _, p, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		s.port = p
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-done
	return nil
}

// Handler is the whole site behind its guards, outermost first: security
// headers on every response, the method (GET and HEAD only), the Host
// header, the token.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: only GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		if !s.hostAllowed(r.Host) {
			http.Error(w, "Host "+r.Host+" is not this server's (DNS rebinding?): open it by the address it listens on", http.StatusMisdirectedRequest)
			return
		}
		if !s.authorized(w, r) {
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// CSP is the Content-Security-Policy of every response: nothing inline,
// nothing from elsewhere, no framing, no plugins, forms only to this
// server (there are only GET search forms).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// hostAllowed checks the Host header: its port must be the listen port and
// its name an IP literal (which no DNS rebinding can produce), the listen
// host, localhost on a loopback listen, or an --allow-host name.
func (s *Server) hostAllowed(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != s.port {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if net.ParseIP(host) != nil {
		return true
	}
	lh, _, _ := net.SplitHostPort(s.cfg.Listen)
	if host == strings.ToLower(lh) || (host == "localhost" && s.cfg.Loopback) {
		return true
	}
	for _, a := range s.cfg.AllowHost {
		if strings.EqualFold(host, a) {
			return true
		}
	}
	return false
}

// authorized checks the token when there is one: the Authorization bearer
// header, or the cookie. A ?token=TOKEN that matches sets the cookie and
// redirects to the same URL without it, so the token leaves the address
// bar and the history. Comparisons are of SHA-256 digests in constant time.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.tokenOK(t) {
		return true
	}
	if c, err := r.Cookie(CookieName); err == nil && s.tokenOK(c.Value) {
		return true
	}
	if t := r.URL.Query().Get("token"); t != "" && s.tokenOK(t) {
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		// The path cleaned to one leading slash: "//evil.example/x" would
		// otherwise redirect off this server.
		p := "/" + strings.TrimLeft(path.Clean("/"+r.URL.Path), "/\\")
		u := url.URL{Path: p, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="artobs"`)
	http.Error(w, "token required: open the address with ?token=TOKEN once, or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
	return false
}

func (s *Server) tokenOK(t string) bool {
	sum := sha256.Sum256([]byte(t))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

// routes registers every page and API document.
func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/queues", http.StatusSeeOther)
	})
	s.mux.HandleFunc("GET /queues", s.pageQueues)
	s.mux.HandleFunc("GET /queues/{queue}", s.pageQueue)
	s.mux.HandleFunc("GET /queues/{queue}/tasks", s.pageTasks)
	s.mux.HandleFunc("GET /queues/{queue}/tasks/{id}", s.pageTask)
	s.mux.HandleFunc("GET /goals", s.pageGoals)
	s.mux.HandleFunc("GET /goals/{id}", s.pageGoal)
	s.mux.HandleFunc("GET /events", s.pageEvents)
	s.mux.HandleFunc("GET /events/stream", s.streamEvents)

	s.mux.HandleFunc("GET /api/queues", s.apiQueues)
	s.mux.HandleFunc("GET /api/queues/{queue}", s.apiQueue)
	s.mux.HandleFunc("GET /api/queues/{queue}/tasks", s.apiTasks)
	s.mux.HandleFunc("GET /api/queues/{queue}/tasks/{id}", s.apiTask)
	s.mux.HandleFunc("GET /api/queues/{queue}/tasks/{id}/transcript", s.apiTranscript)
	s.mux.HandleFunc("GET /api/queues/{queue}/log", s.apiLog)
	s.mux.HandleFunc("GET /api/goals", s.apiGoals)
	s.mux.HandleFunc("GET /api/goals/{id}", s.apiGoal)
	s.mux.HandleFunc("GET /api/events", s.apiEvents)
}

// errStatus maps a reader's error to an HTTP status.
func errStatus(err error) int {
	var nf *notFound
	if errors.As(err, &nf) {
		return http.StatusNotFound
	}
	var bad *badRequest
	if errors.As(err, &bad) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

type notFound struct{ what string }

func (e *notFound) Error() string { return e.what + ": not found" }

type badRequest struct{ why string }

func (e *badRequest) Error() string { return e.why }
