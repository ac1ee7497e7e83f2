// Package natstest runs a real nats-server with JetStream inside a test: on
// a random loopback port, its store in a temporary directory, with
// sync_interval always (every write fsync'd, as docs/artq-nats.md tells
// users to run it). It can be stopped and restarted on the same port and
// store, to test what survives.
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded nats-server.
type Server struct {
	tb    testing.TB
	dir   string
	port  int
	opts  Options
	mu    sync.Mutex
	s     *server.Server
	url   string
	count int
}

// Options adjust the server.
type Options struct {
	// NoSync leaves the server's default sync interval (two minutes)
	// instead of sync_interval always.
	NoSync bool
	// MaxBatch sets jetstream max_batch_size (atomic batch limit).
	MaxBatch int
	// MaxPayload sets max_payload.
	MaxPayload int32
	// NoJetStream starts a server without JetStream.
	NoJetStream bool
}

// Start starts a server; it is shut down when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := &Server{tb: tb, dir: tb.TempDir(), opts: opts}
	s.start()
	tb.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.tb.Helper()
	var srv *server.Server
	var err error
	// Restarting on the same port can race the old listener's close.
	for try := 0; ; try++ {
		srv, err = Serve(s.dir, s.port, s.opts)
		if err == nil {
			break
		}
		if try == 20 || s.port == 0 {
			s.tb.Fatalf("natstest: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	addr := srv.Addr().(*net.TCPAddr)
	s.mu.Lock()
	s.s, s.port = srv, addr.Port
	s.url = "nats://127.0.0.1:" + strconv.Itoa(addr.Port)
	s.count++
	s.mu.Unlock()
}

// Serve starts a server with its store in dir on 127.0.0.1:port (0: a free
// port) and waits until it takes connections and JetStream is ready. Tests
// that need a server in another process (to kill it) call it there.
func Serve(dir string, port int, opts Options) (*server.Server, error) {
	if port == 0 {
		port = -1
	}
	o := &server.Options{
		Host:                  "127.0.0.1",
		Port:                  port,
		JetStream:             !opts.NoJetStream,
		StoreDir:              dir,
		SyncAlways:            !opts.NoSync,
		NoLog:                 true,
		NoSigs:                true,
		MaxPayload:            opts.MaxPayload,
		ServerName:            "artq-test",
		DisableShortFirstPing: true,
	}
	if opts.MaxBatch > 0 {
		o.JetStreamLimits.MaxBatchSize = opts.MaxBatch
	}
	srv, err := server.NewServer(o)
	if err != nil {
		return nil, err
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("server not ready on port %d", port)
	}
	if !opts.NoJetStream {
		deadline := time.Now().Add(10 * time.Second)
		for !srv.JetStreamIsCurrent() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return srv, nil
}

// URL is the server's client URL (the same across restarts).
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// StoreDir is where the server keeps its streams.
func (s *Server) StoreDir() string { return s.dir }

// Running reports whether the server is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s != nil
}

// Stop shuts the server down and waits until it is gone; the store stays.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.s
	s.s = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Shutdown()
	srv.WaitForShutdown()
}

// Restart stops the server if it runs and starts it again on the same port
// with the same store.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Stop()
	s.start()
}

// String is for test logs.
func (s *Server) String() string { return fmt.Sprintf("nats-server %s (store %s)", s.URL(), s.dir) }
