package natsq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/queue"
)

// A cursor is an ephemeral pull consumer on the stream (memory storage, no
// acks, removed by the server after a minute unused) read through one inbox:
// the protocol of nats.go's ordered consumer (every delivery's stream
// sequence is checked, and on any doubt the consumer is dropped and
// recreated from the next sequence), but kept across calls instead of being
// recreated for every fetch.
type cursor struct {
	name  string
	next  uint64 // the sequence the consumer delivers next, at least
	inbox string
	sub   *nats.Subscription
}

const (
	readBatch     = 512
	inactiveAfter = time.Minute
	// reuseWithin: Wait's cursor behind the requested position is caught
	// up by skipping deliveries if it is this close, else recreated.
	reuseWithin = 256
)

func (b *Backend) newCursor(ctx context.Context, start uint64, headersOnly bool) (*cursor, error) {
	c := &cursor{name: "artq_" + nuid.Next(), next: start, inbox: b.nc.NewInbox()}
	sub, err := b.nc.SubscribeSync(c.inbox)
	if err != nil {
		return nil, err
	}
	c.sub = sub
	cctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	_, err = b.js.CreateConsumer(cctx, b.stream, jetstream.ConsumerConfig{
		Name:              c.name,
		Description:       "artq read cursor",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       max(start, 1),
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: inactiveAfter,
		HeadersOnly:       headersOnly,
	})
	if err != nil {
		sub.Unsubscribe()
		return nil, err
	}
	return c, nil
}

// close drops the cursor; the consumer is deleted if the server answers
// quickly, else it expires on its own.
func (c *cursor) close(b *Backend) {
	c.sub.Unsubscribe()
	if b.nc.IsConnected() {
		ctx, cancel := context.WithTimeout(context.Background(), min(b.opts.Timeout, time.Second))
		b.js.DeleteConsumer(ctx, b.stream, c.name)
		cancel()
	}
}

// request asks the consumer for up to batch messages to the cursor's inbox.
func (c *cursor) request(b *Backend, batch int, noWait bool, expires time.Duration) error {
	req, _ := json.Marshal(struct {
		Batch   int           `json:"batch"`
		NoWait  bool          `json:"no_wait,omitempty"`
		Expires time.Duration `json:"expires,omitempty"`
	}{batch, noWait, expires})
	return b.nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+b.stream+"."+c.name, c.inbox, req)
}

// delivery is one message of a pull.
type delivery struct {
	msg *nats.Msg
	seq uint64
}

// stopErr carries an error of pull's callback (the log's or the caller's,
// not the cursor's) out of pull unchanged.
type stopErr struct{ err error }

func (e *stopErr) Error() string { return e.err.Error() }

// pull asks for up to batch messages and gives each to fn as it arrives.
// full says the batch was filled (more may follow); otherwise the server
// ended the request (nothing more now, or it expired). After an error the
// cursor's inbox may still receive this request's messages: drop the cursor.
func (c *cursor) pull(ctx context.Context, b *Backend, batch int, noWait bool, expires time.Duration, fn func(delivery) error) (full bool, err error) {
	if err := c.request(b, batch, noWait, expires); err != nil {
		return false, err
	}
	wait := b.opts.Timeout
	if !noWait {
		wait += expires
	}
	for got := 0; got < batch; {
		mctx, cancel := context.WithTimeout(ctx, wait)
		m, err := c.sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return false, &stopErr{context.Cause(ctx)}
			}
			return false, err
		}
		if len(m.Data) == 0 && m.Reply == "" {
			switch st := m.Header.Get("Status"); st {
			case "404", "408":
				return false, nil // nothing more now, or the request expired
			case "100":
				continue // heartbeat
			case "":
			default:
				// 409: the consumer was deleted, leadership changed, ...
				return false, fmt.Errorf("consumer %s: status %s %s", c.name, st, m.Header.Get("Description"))
			}
		}
		seq, _, ok := ackMeta(m.Reply)
		if !ok {
			return false, fmt.Errorf("consumer %s: a delivery without stream metadata", c.name)
		}
		got++
		if seq >= c.next {
			c.next = seq + 1
		}
		if err := fn(delivery{msg: m, seq: seq}); err != nil {
			return false, &stopErr{err}
		}
	}
	return true, nil
}

// Read implements queue.Backend: it delivers, in order, every event after
// `after` that the stream holds when it is called. A gap in the stream
// sequences is a compaction (each compaction leaves a compacted event above
// its snapshot, so a reader behind it always sees a gap) and gives a
// CompactedError; a gap above the newest snapshot is corruption.
func (b *Backend) Read(ctx context.Context, after uint64, fn func(*queue.Event) error) error {
	if ok, err := b.streamExists(ctx); err != nil || !ok {
		return err
	}
	b.rmu.Lock()
	defer b.rmu.Unlock()
	next := after + 1
	var se *stopErr
	err := b.patient(ctx, func() error {
		err := b.readFrom(ctx, &next, fn)
		if err == nil || errors.As(err, &se) {
			return nil
		}
		// Anything else is the cursor failing (a lost connection, a server
		// restart, a leadership change, a consumer removed while idle):
		// start a new one where we are.
		return &retryErr{err}
	})
	if se != nil {
		return se.err
	}
	if err != nil {
		return b.serverErr("read "+b.stream, err)
	}
	return nil
}

// retryErr marks an error patient may retry whatever it is.
type retryErr struct{ err error }

func (e *retryErr) Error() string { return e.err.Error() }
func (e *retryErr) Unwrap() error { return e.err }

// patient runs fn until it succeeds, fails for a reason other than the
// server being unreachable (or fn marks it retryable), ctx ends, or
// RetryTimeout passes: the client reconnects meanwhile.
func (b *Backend) patient(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(b.opts.RetryTimeout)
	wait := 100 * time.Millisecond
	for {
		err := fn()
		var re *retryErr
		if err == nil || !(errors.As(err, &re) || retryable(err) || b.unavailable(err)) {
			return err
		}
		if errors.As(err, &re) {
			err = re.err
		}
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("gave up after %s: %w", b.opts.RetryTimeout, err)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-b.closed:
			return fmt.Errorf("backend closed: %w", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// unavailable reports an error that means JetStream is not answering now
// although it did before: nats.go reports no responders to an API request
// as "JetStream not enabled".
func (b *Backend) unavailable(err error) bool {
	return b.jsSeen.Load() && (errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrNoStreamResponse))
}

// readFrom delivers events from *next through the stream's last sequence
// as the stream reports it now, advancing *next. Errors of the log or of fn
// come wrapped in stopErr; others are the cursor's.
//
// The end is asked of the stream itself, not inferred from the consumer: a
// consumer learns of new messages asynchronously, so its pending count and
// a no-wait pull's "no messages" can lag an append that was already
// acknowledged, and a reader would miss its own writes.
func (b *Backend) readFrom(ctx context.Context, next *uint64, fn func(*queue.Event) error) error {
	st, err := b.streamState(ctx)
	if err != nil {
		if errors.Is(err, errNoStream) {
			return &stopErr{exitcode.Errorf(exitcode.Internal, "read %s: the stream no longer exists", b.Location())}
		}
		return err
	}
	if st.LastSeq < *next {
		return nil
	}
	// A cursor behind the position is kept and its deliveries up to the
	// position skipped: the queue applies its own appends without reading
	// them (a worker's claim, trace and result move `after` past the
	// cursor three times a task), and recreating the consumer each time
	// cost a create and a delete request (and the server's work for both)
	// per catch-up, more than pulling the few events again.
	c := b.rc
	if c != nil && (c.next > *next || *next-c.next > reuseWithin) {
		c.close(b)
		c, b.rc = nil, nil
	}
	if c == nil {
		if c, err = b.newCursor(ctx, *next, false); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return &stopErr{exitcode.Errorf(exitcode.Internal, "read %s: the stream no longer exists", b.Location())}
			}
			return err
		}
		b.rc = c
	}
	// pos is the next sequence to read; *next the next to deliver. They
	// differ while a batch is read: its events are held until its commit
	// (the stream stores a batch's messages one by one, and a reader
	// between them would otherwise apply part of it).
	pos := *next
	var held batchHold
	var deadline time.Time
	for {
		for pos <= st.LastSeq {
			// Ask for exactly the messages known to exist, so that the pull
			// ends full without waiting for more. (Below the newest snapshot
			// there may be fewer, but the first gap ends the read.)
			from := c.next
			n := min(readBatch, int(st.LastSeq-from)+1)
			full, err := c.pull(ctx, b, n, false, b.opts.Timeout, func(d delivery) error {
				if d.seq < pos {
					// Skipped (applied already). A gap here means the
					// events were compacted away behind the reader: the
					// pull would wait for messages that are gone, so the
					// cursor is dropped and made again at the position.
					if d.seq != from {
						return errSkipGap
					}
					from++
					return nil
				}
				if d.seq > pos {
					return b.gap(ctx, pos, d.seq)
				}
				ev, err := b.decode(d.msg.Subject, d.seq, d.msg.Data)
				if err != nil {
					return err
				}
				pos = d.seq + 1
				whole, err := held.add(b, d, ev)
				if err != nil || whole == nil {
					return err
				}
				*next = pos
				for _, ev := range whole {
					if err := fn(ev); err != nil {
						return err
					}
				}
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				return nil
			})
			if se, ok := err.(*stopErr); ok && se.err == errSkipGap {
				c.close(b)
				b.rc = nil
				return &retryErr{errSkipGap}
			}
			if err == nil && !full {
				err = fmt.Errorf("consumer %s: the stream holds %d but the pull expired at %d", c.name, st.LastSeq, pos-1)
			}
			if err != nil {
				c.close(b)
				b.rc = nil
				return err
			}
		}
		if held.evs == nil {
			return nil
		}
		// A batch the server is still storing: its commit follows at once.
		// Wait for it a request timeout at most; past that the read ends
		// before the batch (*next stays at its first event) and the next
		// read tries again.
		if deadline.IsZero() {
			deadline = time.Now().Add(b.opts.Timeout)
		} else if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return &stopErr{context.Cause(ctx)}
		case <-time.After(2 * time.Millisecond):
		}
		if st, err = b.streamState(ctx); err != nil {
			return err
		}
	}
}

// batchHold holds the events of a batch read so far: JetStream keeps an
// atomic batch's headers on each stored message (Nats-Batch-Id on all,
// Nats-Batch-Commit on the last), and a reader applies the batch only
// once it has read the commit, as the file backend's readers do.
type batchHold struct {
	id  string
	evs []*queue.Event
}

// add takes the next event read; it returns the events to deliver now:
// ev alone (not in a batch), a whole batch (ev its commit), or none (held).
// An event outside the batch held, before its commit, is corruption: the
// server stores a batch whole or not at all.
func (h *batchHold) add(b *Backend, d delivery, ev *queue.Event) ([]*queue.Event, error) {
	id := d.msg.Header.Get(hdrBatchID)
	if h.evs != nil && id != h.id {
		return nil, &queue.CorruptError{Path: b.Location(), Offset: -1, Seq: d.seq,
			Why: fmt.Sprintf("batch %s has no commit before event %d", h.id, d.seq)}
	}
	if id == "" {
		return []*queue.Event{ev}, nil
	}
	h.id = id
	h.evs = append(h.evs, ev)
	if d.msg.Header.Get(hdrBatchCommit) == "" {
		return nil, nil
	}
	whole := h.evs
	h.id, h.evs = "", nil
	return whole, nil
}

// errSkipGap is a cursor that found events missing between its position
// and the reader's: it is made again at the reader's position.
var errSkipGap = errors.New("events missing behind the reader's position")

// streamState is the stream's first and last sequence now, from its leader.
type streamState struct {
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	Msgs     uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
}

func (b *Backend) streamState(ctx context.Context) (*streamState, error) {
	rctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	m, err := b.nc.RequestWithContext(rctx, "$JS.API.STREAM.INFO."+b.stream, nil)
	if err != nil {
		return nil, err
	}
	return decodeStreamState(m.Data)
}

// decodeStreamState reads the state (or the error) out of a stream info
// reply. The reply is mostly the stream's configuration, which a read does
// not need: the two objects are picked out with gjson and only they are
// decoded (a full decode was most of the client's CPU per stream-info
// request, which every read makes).
func decodeStreamState(data []byte) (*streamState, error) {
	if !gjson.ValidBytes(data) {
		return nil, errors.New("undecodable stream info: not JSON")
	}
	r := gjson.GetManyBytes(data, "error", "state")
	if r[0].IsObject() {
		var e apiError
		if err := json.Unmarshal([]byte(r[0].Raw), &e); err != nil {
			return nil, fmt.Errorf("undecodable stream info: %w", err)
		}
		if e.ErrCode == errStreamNotFound {
			return nil, errNoStream
		}
		return nil, &e
	}
	if !r[1].IsObject() {
		return nil, errors.New("stream info without state")
	}
	var st streamState
	if err := json.Unmarshal([]byte(r[1].Raw), &st); err != nil {
		return nil, fmt.Errorf("undecodable stream info: %w", err)
	}
	return &st, nil
}

// gap explains missing sequences [want, got): events a compaction removed
// (CompactedError), or corruption.
func (b *Backend) gap(ctx context.Context, want, got uint64) error {
	snap, err := b.newestSnapshot(ctx)
	if err != nil {
		return err
	}
	if snap != nil && got-1 <= snap.seq {
		return &queue.CompactedError{First: max(got, snap.seq+1)}
	}
	why := fmt.Sprintf("events %d to %d are missing from the stream and no snapshot covers them", want, got-1)
	if snap != nil {
		why += fmt.Sprintf(" (the newest snapshot is at %d)", snap.seq)
	}
	return &queue.CorruptError{Path: b.Location(), Offset: -1, Seq: got, Why: why}
}

// decode turns a stored message into its event, checking its record and
// that it is on the subject its event belongs to.
func (b *Backend) decode(subject string, seq uint64, data []byte) (*queue.Event, error) {
	bad := func(why string, err error) error {
		return &queue.CorruptError{Path: b.Location(), Offset: -1, Seq: seq, Why: why, Err: err}
	}
	ev, err := queue.DecodeRecord(data)
	if err != nil {
		return nil, bad("message on "+subject+": "+err.Error(), err)
	}
	if ev.Seq != 0 {
		return nil, bad(fmt.Sprintf("message on %s carries sequence %d: not written by this backend", subject, ev.Seq), nil)
	}
	switch {
	case ev.Type == queue.EventCompacted || ev.Type == queue.EventTruncated:
		if subject != b.logSubj {
			return nil, bad(fmt.Sprintf("a %s event on %s, not %s", ev.Type, subject, b.logSubj), nil)
		}
	case subject != b.taskPre+ev.Task:
		return nil, bad(fmt.Sprintf("an event of task %q on %s", ev.Task, subject), nil)
	}
	ev.Seq = seq
	return ev, nil
}

// ---- Wait ------------------------------------------------------------------

// watcher is Wait's own cursor (headers only: it needs sequences, not
// events), what it has learned (the highest sequence delivered to it), and
// its standing pull: one request for up to waitBatch messages that the
// server answers as events are stored, kept open across calls. A request
// per call would cost a request per wake; a worker's watcher wakes for
// every other worker's append (three per task each), so with four workers
// that was about two requests per task.
type watcher struct {
	c    *cursor
	last uint64
	// open is how many more messages the standing pull may deliver (0:
	// none is open); until is when the server expires it.
	open  int
	until time.Time
}

const (
	// waitPoll bounds one standing pull of Wait.
	waitPoll = 30 * time.Second
	// waitBatch is how many deliveries one standing pull asks for.
	waitBatch = 256
)

// Wait implements queue.Backend: it returns once the watcher's consumer
// (headers only) has delivered an event after `after`; the server sends
// each the moment it is stored, on a pull left open across calls.
func (b *Backend) Wait(ctx context.Context, after uint64) error {
	for {
		ok, err := b.streamExists(ctx)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		// Nothing to wait on before the stream is created.
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(time.Second):
		}
	}
	// A channel as a lock, so that a waiter queued behind another still
	// sees its own context end.
	select {
	case b.waitSem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-b.waitSem }()
	w := b.wc
	if w != nil && w.last > after {
		return nil
	}
	if w != nil && (w.c.next > after+1 || after+1-w.c.next > reuseWithin) {
		w.c.close(b)
		w, b.wc = nil, nil
	}
	if w == nil {
		c, err := b.newCursor(ctx, after+1, true)
		if err != nil {
			return b.waitFailed(ctx, err)
		}
		w = &watcher{c: c, last: after}
		b.wc = w
	}
	drop := func(err error) error {
		w.c.close(b)
		b.wc = nil
		return b.waitFailed(ctx, err)
	}
	for {
		// Only delivered sequences count: a consumer's pending count can be
		// stale, and trusting it could make Wait return at once forever.
		if w.open == 0 || time.Now().After(w.until) {
			if err := w.c.request(b, waitBatch, false, waitPoll); err != nil {
				return drop(err)
			}
			w.open, w.until = waitBatch, time.Now().Add(waitPoll)
		}
		// A pull the server should have ended by now (lost in a reconnect,
		// a server restart) is given up after a request timeout more.
		mctx, cancel := context.WithDeadline(ctx, w.until.Add(b.opts.Timeout))
		m, err := w.c.sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				// The caller gave up; the pull stays open for the next
				// call (its deliveries wait in the inbox).
				return context.Cause(ctx)
			}
			return drop(err)
		}
		if len(m.Data) == 0 && m.Reply == "" {
			switch st := m.Header.Get("Status"); st {
			case "404", "408":
				w.open = 0 // the pull ended: expired, or nothing more
				continue
			case "100":
				continue // heartbeat
			case "":
			default:
				// 409: the consumer was deleted, leadership changed, ...
				return drop(fmt.Errorf("consumer %s: status %s %s", w.c.name, st, m.Header.Get("Description")))
			}
		}
		seq, _, ok := ackMeta(m.Reply)
		if !ok {
			return drop(fmt.Errorf("consumer %s: a delivery without stream metadata", w.c.name))
		}
		w.open--
		w.c.next = max(w.c.next, seq+1)
		w.last = max(w.last, seq)
		if w.last > after {
			return nil
		}
	}
}

// waitFailed backs off after a failure of the server and returns early, as
// Wait may: the caller's next Read reports the failure if it persists.
func (b *Backend) waitFailed(ctx context.Context, _ error) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-b.closed:
		return errors.New("backend closed")
	case <-time.After(time.Second):
		return nil
	}
}
