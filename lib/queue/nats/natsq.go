// Package natsq is the queue's NATS JetStream backend: the same events as
// lib/queue/file, kept in a JetStream stream so that workers on many machines
// can share one queue. The reducer, recovery and every CLI contract stay in
// lib/queue; this package only stores and orders records and keeps leases.
//
// Layout on the server, for queue NAME:
//
//	stream ART_NAME            LimitsPolicy, file storage, subjects art.NAME.>
//	  art.NAME.task.ID         every event of task ID, in order
//	  art.NAME.log             log-level events (compacted)
//	KV bucket art_NAME_leases  one key per live worker, with a per-key TTL
//	object store art_NAME_snapshots  snapshot-SEQ: the state through SEQ
//
// A queue sequence is the event's stream sequence. Every proposal is published
// with Nats-Expected-Last-Subject-Sequence set to the task's latest event, so
// the server itself refuses an append that lost a race, and with a
// Nats-Msg-Id derived from the proposal, so a publish retried after a lost
// acknowledgement is recognised instead of appended twice. Several proposals
// are published as one JetStream atomic batch: all of them or none.
//
// It refuses: work-queue or interest streams, memory storage, asynchronous
// persistence, streams with limits that would discard events, and deleting
// single messages (the stream is created with DenyDelete). A backend opened
// read-only never creates the stream or a bucket; it only reads (through
// ephemeral consumers, which hold no queue data).
package natsq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// Defaults.
const (
	DefaultTimeout      = 5 * time.Second
	DefaultRetryTimeout = 30 * time.Second
	// DefaultMaxBatch is nats-server's default limit of messages in one
	// atomic publish (jetstream { limits { batch { max_msgs } } } in its
	// configuration file; MaxBatchSize in its Go options). The backend
	// does not assume it (see Options.MaxBatch): a server may be set
	// higher, and the CLI has no flag for it.
	DefaultMaxBatch = 1000
	// DuplicateWindow is how long the stream remembers message ids: a
	// publish retried within it is recognised, not appended twice.
	DuplicateWindow = 2 * time.Minute
	// markerTTL is how long a released or expired lease leaves its marker.
	markerTTL = time.Minute
)

// Options configure a Backend.
type Options struct {
	// ReadOnly opens for inspection: nothing is created or written; a
	// missing stream reads as an empty queue.
	ReadOnly bool
	// Replicas is the replica count of the stream and buckets this backend
	// creates (default 1). Existing ones are used as they are.
	Replicas int
	// Timeout bounds one request to the server (default 5s).
	Timeout time.Duration
	// RetryTimeout is how long an operation keeps trying while the server
	// cannot be reached (the client reconnects meanwhile) or an append's
	// outcome is in doubt (retried with the same message ids) before it
	// fails (default 30s, the default lease: a worker rides out an outage
	// shorter than its lease).
	RetryTimeout time.Duration
	// MaxBatch is the largest atomic batch to send. 0 (the default) means
	// the server's own limit, learned from its refusal: a batch above it
	// is refused whole by the server (nothing is stored), the backend
	// remembers the limit, and later larger batches are refused (exit 2)
	// before anything is sent. A batch is appended whole or not at all,
	// never in parts.
	MaxBatch int
	// Name is the client connection name the server shows (default
	// "artq QUEUE").
	Name string
	// NATS are extra connection options (credentials, TLS).
	NATS []nats.Option

	// hook, in tests, runs at named steps of a compaction; an error stops
	// it there as a crash would.
	hook func(step string) error
}

// Backend is one queue on a NATS server. It implements queue.Backend.
type Backend struct {
	url, queue string
	opts       Options

	nc *nats.Conn
	js jetstream.JetStream

	stream   string // ART_<queue>
	prefix   string // art.<queue>.
	taskPre  string // art.<queue>.task.
	logSubj  string // art.<queue>.log
	leaseKV  string // art_<queue>_leases
	leaseStr string // KV_art_<queue>_leases
	leasePre string // $KV.art_<queue>_leases.
	snapObj  string // art_<queue>_snapshots

	mu     sync.Mutex
	exists bool // the stream exists (always true for a writable backend)
	obs    jetstream.ObjectStore
	kvOK   bool

	rmu sync.Mutex
	rc  *cursor // Read's consumer

	waitSem chan struct{} // one Wait at a time; guards wc
	wc      *watcher      // Wait's consumer

	lmu    sync.Mutex
	leases map[*lease]struct{}

	maxBatch atomic.Int64 // Options.MaxBatch, lowered if the server says so
	jsSeen   atomic.Bool  // JetStream answered once
	dupNanos atomic.Int64 // the stream's duplicate window
	// recognised counts retried publishes found already stored.
	recognised atomic.Int64

	closeOnce sync.Once
	closed    chan struct{}
}

var _ queue.Backend = (*Backend)(nil)

// IsURL reports whether a --backend value names a NATS server.
func IsURL(s string) bool {
	for _, p := range []string{"nats://", "tls://", "ws://", "wss://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Open connects to the NATS server at serverURL and opens queue name on it.
// A writable backend creates the stream on first use (the lease bucket and
// the snapshot store on first need); a read-only one creates nothing. An
// unreachable server, or one without JetStream, is a clear error (exit 125)
// and nothing is written.
func Open(ctx context.Context, serverURL, name string, opts Options) (*Backend, error) {
	if err := queue.ValidName("queue", name); err != nil {
		return nil, err
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RetryTimeout <= 0 {
		opts.RetryTimeout = DefaultRetryTimeout
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = math.MaxInt32
	}
	if opts.Name == "" {
		opts.Name = "artq " + name
	}
	b := &Backend{
		url: serverURL, queue: name, opts: opts,
		stream:   "ART_" + name,
		prefix:   "art." + name + ".",
		taskPre:  "art." + name + ".task.",
		logSubj:  "art." + name + ".log",
		leaseKV:  "art_" + name + "_leases",
		leaseStr: "KV_art_" + name + "_leases",
		leasePre: "$KV.art_" + name + "_leases.",
		snapObj:  "art_" + name + "_snapshots",
		leases:   map[*lease]struct{}{},
		closed:   make(chan struct{}),
		waitSem:  make(chan struct{}, 1),
	}
	b.maxBatch.Store(int64(opts.MaxBatch))
	nopts := append([]nats.Option{
		nats.Name(opts.Name),
		nats.Timeout(opts.Timeout),
		// Keep reconnecting for as long as the process wants the queue: a
		// worker stops on its own when its lease is lost.
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		// No reconnect buffer: a publish made while disconnected fails at
		// once instead of being sent later, after its caller gave up.
		nats.ReconnectBufSize(-1),
		// Notice a silent server (a partition) within about 30s even when
		// idle.
		nats.PingInterval(10 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.NoCallbacksAfterClientClose(),
		// The library's default handlers print to stderr; errors reach
		// callers through return values instead.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}, opts.NATS...)
	nc, err := nats.Connect(serverURL, nopts...)
	if err != nil {
		return nil, exitcode.Errorf(exitcode.Internal, "queue backend %s: cannot connect: %w", Redact(serverURL), err)
	}
	b.nc = nc
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(opts.Timeout))
	if err != nil {
		nc.Close()
		return nil, exitcode.Errorf(exitcode.Internal, "queue backend %s: %w", Redact(serverURL), err)
	}
	b.js = js
	if err := b.setup(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return b, nil
}

// Redact hides the passwords and tokens in a server URL (or a
// comma-separated list of them, as nats.Connect takes), for messages.
func Redact(s string) string {
	if strings.Contains(s, ",") {
		parts := strings.Split(s, ",")
		for i, p := range parts {
			parts[i] = Redact(p)
		}
		return strings.Join(parts, ",")
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	} else {
		u.User = url.User("REDACTED")
	}
	return u.String()
}

// Location names the queue for messages and fsck: server URL and stream.
func (b *Backend) Location() string { return Redact(b.url) + "/" + b.stream }

// Queue is the queue name.
func (b *Backend) Queue() string { return b.queue }

// Stream is the name of the queue's stream.
func (b *Backend) Stream() string { return b.stream }

// Conn is the backend's connection, for tests and diagnostics.
func (b *Backend) Conn() *nats.Conn { return b.nc }

// ReadOnly implements queue.Backend.
func (b *Backend) ReadOnly() bool { return b.opts.ReadOnly }

// Close stops lease renewals (a lease not released expires after its TTL,
// as it would if the process died), deletes this backend's consumers and
// closes the connection.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		close(b.closed)
		b.lmu.Lock()
		ls := make([]*lease, 0, len(b.leases))
		for l := range b.leases {
			ls = append(ls, l)
		}
		b.lmu.Unlock()
		for _, l := range ls {
			l.stop()
		}
		// Delete the consumers unless a Wait or Read is using them now
		// (closing the connection ends those; the server drops their
		// consumers after a minute).
		select {
		case b.waitSem <- struct{}{}:
			if b.wc != nil {
				b.wc.c.close(b)
				b.wc = nil
			}
			<-b.waitSem
		default:
		}
		if b.rmu.TryLock() {
			if b.rc != nil {
				b.rc.close(b)
				b.rc = nil
			}
			b.rmu.Unlock()
		}
		b.nc.Close()
	})
	return nil
}

// minServer is the oldest server with everything the backend relies on:
// atomic batch publish (2.12) and per-message TTLs (2.11).
const minServer = "2.12.0"

// setup finds the stream, creating it if writable, and checks that it is one
// this backend can trust.
func (b *Backend) setup(ctx context.Context) error {
	if !b.opts.ReadOnly && !atLeast(b.nc.ConnectedServerVersion(), 2, 12) {
		return exitcode.Errorf(exitcode.Internal, "queue backend %s: server %s is too old: the NATS backend needs nats-server %s or newer (atomic batch publish)", Redact(b.url), b.nc.ConnectedServerVersion(), minServer)
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	s, err := b.js.Stream(ctx, b.stream)
	switch {
	case err == nil:
		b.jsSeen.Store(true)
		b.exists = true
		return b.verify(s.CachedInfo())
	case errors.Is(err, jetstream.ErrStreamNotFound):
		b.jsSeen.Store(true)
	default:
		return b.serverErr("look up stream "+b.stream, err)
	}
	if b.opts.ReadOnly {
		return nil
	}
	s, err = b.js.CreateStream(ctx, b.streamConfig())
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		// Created meanwhile by another process, maybe with another config.
		s, err = b.js.Stream(ctx, b.stream)
	}
	if err != nil {
		return b.serverErr("create stream "+b.stream, err)
	}
	b.exists = true
	return b.verify(s.CachedInfo())
}

func (b *Backend) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        b.stream,
		Description: "artq queue " + b.queue + ": the event log (lib/queue/nats)",
		Subjects:    []string{b.prefix + ">"},
		// The stream is the source of truth: nothing is ever removed by the
		// server on its own.
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardNew,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgsPerSubject: -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          b.opts.Replicas,
		Duplicates:        DuplicateWindow,
		// Sequences stay gapless above the newest snapshot: nothing but a
		// compaction removes events, and it removes only what a snapshot
		// covers.
		DenyDelete: true,
		// Gets are answered by the stream leader, never by a lagging
		// replica: checks of an append's outcome must see it.
		AllowDirect:        false,
		AllowAtomicPublish: true,
	}
}

// verify refuses a stream that would lose or reorder events.
func (b *Backend) verify(info *jetstream.StreamInfo) error {
	if info == nil {
		return exitcode.Errorf(exitcode.Internal, "stream %s: no stream info", b.stream)
	}
	c := info.Config
	bad := func(why string) error {
		return exitcode.Errorf(exitcode.Internal, "stream %s on %s: %s; the queue refuses to use it (see docs/artq-nats.md)", b.stream, Redact(b.url), why)
	}
	switch {
	case c.Retention != jetstream.LimitsPolicy:
		return bad(fmt.Sprintf("retention is %s, not limits: a work-queue or interest stream deletes events", c.Retention))
	case c.Storage != jetstream.FileStorage:
		return bad("storage is memory, not file")
	case c.PersistMode == jetstream.AsyncPersistMode:
		return bad("persist_mode is async: events would be acknowledged before they are written")
	case c.MaxAge > 0:
		return bad("max_age is set: events would expire")
	case c.MaxMsgsPerSubject > 0:
		return bad("max_msgs_per_subject is set: a task's history would be cut")
	case (c.MaxMsgs > 0 || c.MaxBytes > 0) && c.Discard != jetstream.DiscardNew:
		return bad("message or byte limits discard old events")
	case !c.AllowAtomicPublish && !b.opts.ReadOnly:
		return bad("allow_atomic is off: batches could not be appended all or nothing")
	case c.Sealed && !b.opts.ReadOnly:
		return bad("the stream is sealed")
	}
	if c.Duplicates < 10*time.Second && !b.opts.ReadOnly {
		return bad(fmt.Sprintf("its duplicate window is %s: a retried publish could be stored twice (want at least 10s; artq creates it with %s)", c.Duplicates, DuplicateWindow))
	}
	b.dupNanos.Store(int64(c.Duplicates))
	want := b.prefix + ">"
	for _, s := range c.Subjects {
		if s == want {
			return nil
		}
	}
	return bad(fmt.Sprintf("its subjects %v do not include %s", c.Subjects, want))
}

// serverErr turns an error from the server or the connection into the
// queue's own failure (exit 125) with a message that says what to do.
func (b *Backend) serverErr(op string, err error) error {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount),
		errors.Is(err, nats.ErrNoResponders) && !b.jsSeen.Load():
		// Nothing answers JetStream API requests at all.
		return exitcode.Errorf(exitcode.Internal, "%s on %s: JetStream is not enabled on the server (start it with -js)", op, Redact(b.url))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return exitcode.Errorf(exitcode.Internal, "%s on %s: no answer within %s: %w", op, Redact(b.url), b.opts.Timeout, err)
	case errors.Is(err, context.Canceled):
		return err
	}
	return exitcode.Errorf(exitcode.Internal, "%s on %s: %w", op, Redact(b.url), err)
}

// streamExists reports whether the stream exists, looking again if a
// read-only backend has not seen it yet.
func (b *Backend) streamExists(ctx context.Context) (bool, error) {
	b.mu.Lock()
	ok := b.exists
	b.mu.Unlock()
	if ok {
		return true, nil
	}
	var s jetstream.Stream
	err := b.patient(ctx, func() error {
		sctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
		defer cancel()
		var err error
		s, err = b.js.Stream(sctx, b.stream)
		return err
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, nil
	}
	if err != nil {
		return false, b.serverErr("look up stream "+b.stream, err)
	}
	if err := b.verify(s.CachedInfo()); err != nil {
		return false, err
	}
	b.mu.Lock()
	b.exists = true
	b.mu.Unlock()
	return true, nil
}

// hostID names this process in lease values, for operators.
func hostID() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s pid %d", h, os.Getpid())
}

// atLeast reports whether a server version string (2.12.1, 2.14.0-beta.2)
// is major.minor or newer.
func atLeast(version string, major, minor int) bool {
	var ma, mi int
	if _, err := fmt.Sscanf(version, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

func (b *Backend) hook(step string) error {
	if b.opts.hook != nil {
		return b.opts.hook(step)
	}
	return nil
}

// dupWindow is the stream's duplicate window.
func (b *Backend) dupWindow() time.Duration {
	if d := time.Duration(b.dupNanos.Load()); d > 0 {
		return d
	}
	return DuplicateWindow
}
