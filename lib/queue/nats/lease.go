package natsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// Leases are keys in a JetStream KV bucket (art_QUEUE_leases), one per live
// worker, each written with a per-message TTL (Nats-TTL): the server itself
// removes a key its worker stopped renewing, so liveness never depends on
// the clocks of the machines involved. A worker renews its key every third
// of the TTL with a conditional write (the key's last revision), so a key
// that expired meanwhile is never silently revived: the renewal fails and
// the lease is lost. Expired and released keys leave a marker that the
// server removes after a minute.

// MinLease is the shortest lease: JetStream message TTLs count whole seconds.
const MinLease = time.Second

type lease struct {
	b      *Backend
	worker string
	ttl    time.Duration

	mu  sync.Mutex
	rev uint64 // the key's revision we wrote last
	// until is okSent+ttl of the last acknowledged write: the lease is
	// held by the local clock before it (the server keeps the key at
	// least that long). Guarded by umu, not mu, which a renewal holds
	// across its request: Held never waits for the network.
	umu   sync.Mutex
	until time.Time
	n     int // renewals written, part of the value so a retry is ours
	lost  chan struct{}
	lose  sync.Once
	quit  chan struct{}
	done  chan struct{}
	stop  func()
}

func (l *lease) Lost() <-chan struct{} { return l.lost }

func (l *lease) setUntil(t time.Time) {
	l.umu.Lock()
	l.until = t
	l.umu.Unlock()
}

// Held implements queue.Lease by the local monotonic clock.
func (l *lease) Held() bool {
	select {
	case <-l.lost:
		return false
	default:
	}
	l.umu.Lock()
	until := l.until
	l.umu.Unlock()
	return time.Now().Before(until)
}

// leaseValue says who holds the key, for operators reading the bucket.
type leaseValue struct {
	Worker  string    `json:"worker"`
	Host    string    `json:"host"`
	TTLMS   int64     `json:"ttl_ms"`
	Renewal int       `json:"renewal"`
	Time    time.Time `json:"time"`
}

// ensureLeases creates the lease bucket if it does not exist.
func (b *Backend) ensureLeases(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kvOK {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	_, err := b.js.KeyValue(ctx, b.leaseKV)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      b.leaseKV,
			Description: "artq queue " + b.queue + ": worker leases",
			History:     1,
			Storage:     jetstream.FileStorage,
			Replicas:    b.opts.Replicas,
			// Enables per-key TTLs; markers of expired keys live this long.
			LimitMarkerTTL: markerTTL,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			err = nil
		}
	}
	if err != nil {
		return b.serverErr("lease bucket "+b.leaseKV, err)
	}
	b.kvOK = true
	return nil
}

// AcquireLease implements queue.Backend: it creates the worker's key with a
// TTL of ttl (rounded up to whole seconds, at least MinLease) and renews it
// every ttl/3 until Release or Close. Lost closes when the backend can no
// longer vouch for the lease: a renewal was refused (the key expired), or
// none succeeded for ttl since the last good one was sent.
func (b *Backend) AcquireLease(ctx context.Context, worker string, ttl time.Duration) (queue.Lease, error) {
	if b.opts.ReadOnly {
		return nil, queue.ErrReadOnly
	}
	if err := queue.ValidName("worker", worker); err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = queue.DefaultLease
	}
	if ttl < MinLease {
		return nil, exitcode.Field(exitcode.Usage, "Lease", ttl.String(), "the NATS backend's leases are at least %s", MinLease)
	}
	if err := b.ensureLeases(ctx); err != nil {
		return nil, err
	}
	l := &lease{b: b, worker: worker, ttl: ttl, lost: make(chan struct{}), quit: make(chan struct{}), done: make(chan struct{})}
	cur, err := b.msgGet(ctx, b.leaseStr, msgGetReq{LastFor: b.leasePre + worker})
	if err != nil {
		return nil, b.serverErr("lease "+worker, err)
	}
	var expect uint64
	if cur != nil {
		if live(cur) {
			return nil, exitcode.Errorf(exitcode.Conflict, "worker %s: another live worker holds this id", worker)
		}
		expect = cur.Seq
	}
	sent := time.Now()
	rev, err := l.write(ctx, expect)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.stale() {
			return nil, exitcode.Errorf(exitcode.Conflict, "worker %s: another live worker holds this id", worker)
		}
		return nil, b.serverErr("lease "+worker, err)
	}
	l.rev = rev
	l.setUntil(sent.Add(ttl))
	var once sync.Once
	l.stop = func() {
		once.Do(func() { close(l.quit) })
		<-l.done
	}
	b.lmu.Lock()
	b.leases[l] = struct{}{}
	b.lmu.Unlock()
	go l.renew(sent)
	return l, nil
}

// live reports whether a stored lease key is a holder's value, not a marker
// left by a release or an expiry.
func live(m *storedMsg) bool {
	return m.Header.Get("KV-Operation") == "" && m.Header.Get("Nats-Marker-Reason") == ""
}

// ttlHeader is the TTL in whole seconds, rounded up.
func ttlHeader(d time.Duration) string {
	s := (d + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(s), 10) + "s"
}

// write publishes the worker's key with its TTL if the key's last revision
// is expect, and returns the new revision.
func (l *lease) write(ctx context.Context, expect uint64) (uint64, error) {
	l.n++
	v, _ := json.Marshal(leaseValue{Worker: l.worker, Host: hostID(), TTLMS: l.ttl.Milliseconds(), Renewal: l.n, Time: time.Now().UTC()})
	m := &nats.Msg{Subject: l.b.leasePre + l.worker, Data: v, Header: nats.Header{}}
	m.Header.Set(hdrTTL, ttlHeader(l.ttl))
	m.Header.Set(hdrExpectSubj, strconv.FormatUint(expect, 10))
	rctx, cancel := context.WithTimeout(ctx, l.b.opts.Timeout)
	defer cancel()
	r, err := l.b.nc.RequestMsgWithContext(rctx, m)
	if err != nil {
		if retryable(err) {
			// The write may have landed with its answer lost: if the key's
			// latest value is this one, it did.
			if cur, gerr := l.b.msgGet(ctx, l.b.leaseStr, msgGetReq{LastFor: m.Subject}); gerr == nil && cur != nil && string(cur.Data) == string(v) {
				return cur.Seq, nil
			}
		}
		return 0, err
	}
	ack, err := decodePubAck(r)
	if err != nil {
		return 0, err
	}
	if ack.Error != nil {
		return 0, ack.Error
	}
	return ack.Seq, nil
}

func (l *lease) markLost() { l.lose.Do(func() { close(l.lost) }) }

// renew keeps the key alive. okSent is when the last successful write was
// sent: the server's expiry is at least ttl after that.
func (l *lease) renew(okSent time.Time) {
	defer close(l.done)
	every := max(l.ttl/3, 100*time.Millisecond)
	next := time.NewTimer(every)
	defer next.Stop()
	for {
		deadline := okSent.Add(l.ttl)
		if !time.Now().Before(deadline) {
			l.markLost()
			return
		}
		select {
		case <-l.quit:
			return
		case <-l.b.closed:
			return
		case <-next.C:
		case <-time.After(time.Until(deadline)):
			// No renewal landed for a whole TTL: the key may be gone and
			// other workers may recover our tasks.
			l.markLost()
			return
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		sent := time.Now()
		l.mu.Lock()
		rev, err := l.write(ctx, l.rev)
		if err == nil {
			l.rev = rev
			l.setUntil(sent.Add(l.ttl))
		}
		l.mu.Unlock()
		cancel()
		switch {
		case err == nil:
			okSent = sent
			next.Reset(every)
		case isRefused(err):
			// The key is not the one we wrote last: it expired (a partition
			// longer than the TTL) and may be recreated by nobody else, but
			// our tasks may already be recovered.
			l.markLost()
			return
		default:
			// The server is unreachable: try again soon, until the TTL
			// since the last good renewal runs out.
			next.Reset(min(every, 250*time.Millisecond))
		}
	}
}

func isRefused(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.stale()
}

// Release implements queue.Lease: it stops renewing and removes the key at
// once, so the worker's running tasks are recovered by the next worker that
// looks. If the server cannot be reached the key simply expires.
func (l *lease) Release() error {
	l.stop()
	b := l.b
	b.lmu.Lock()
	delete(b.leases, l)
	b.lmu.Unlock()
	select {
	case <-l.lost:
		return nil // nothing of ours left to remove
	default:
	}
	l.mu.Lock()
	rev := l.rev
	l.mu.Unlock()
	m := &nats.Msg{Subject: b.leasePre + l.worker, Header: nats.Header{}}
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set("Nats-Rollup", "sub")
	m.Header.Set(hdrTTL, ttlHeader(markerTTL))
	m.Header.Set(hdrExpectSubj, strconv.FormatUint(rev, 10))
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
	defer cancel()
	r, err := b.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return b.serverErr("release lease "+l.worker, err)
	}
	ack, err := decodePubAck(r)
	if err != nil {
		return b.serverErr("release lease "+l.worker, err)
	}
	if ack.Error != nil && !ack.Error.stale() {
		return b.serverErr("release lease "+l.worker, ack.Error)
	}
	return nil
}

// Alive implements queue.Backend: whether the worker's key holds a value
// now. It asks the bucket's leader, never a replica that may lag.
func (b *Backend) Alive(ctx context.Context, worker string) (bool, error) {
	if err := queue.ValidName("worker", worker); err != nil {
		return false, err
	}
	var m *storedMsg
	err := b.patient(ctx, func() error {
		var err error
		m, err = b.msgGet(ctx, b.leaseStr, msgGetReq{LastFor: b.leasePre + worker})
		if errors.Is(err, errNoStream) {
			m, err = nil, nil // no worker ever took a lease on this queue
		}
		return err
	})
	if err != nil {
		return false, b.serverErr("lease "+worker, err)
	}
	return m != nil && live(m), nil
}

// String is for messages.
func (l *lease) String() string { return fmt.Sprintf("lease %s (ttl %s)", l.worker, l.ttl) }
