package otlpexport

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// buffer is the bounded queue between the work and the network: put never
// blocks (a full buffer drops and counts), and one goroutine sends batches.
// The SDK's own batch processors also drop when full, but do not say how
// many; the count is the sink contract's promise (docs/observability.md).
type buffer[T any] struct {
	ch      chan T
	sync    chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	stopped atomic.Bool
	send    func(context.Context, []T) error
	timeout time.Duration
	fail    func(n int, err error)

	dropped  atomic.Int64
	exported atomic.Int64
	once     sync.Once
}

const (
	maxBatch      = 512
	flushInterval = 200 * time.Millisecond
)

func newBuffer[T any](capacity int, timeout time.Duration, send func(context.Context, []T) error, fail func(int, error)) *buffer[T] {
	b := &buffer[T]{ch: make(chan T, capacity), sync: make(chan chan struct{}), stop: make(chan struct{}), done: make(chan struct{}), send: send, timeout: timeout, fail: fail}
	go b.loop()
	return b
}

// put queues v, or counts it dropped when the buffer is full or closed.
func (b *buffer[T]) put(v T) {
	if b.stopped.Load() {
		b.dropped.Add(1)
		return
	}
	select {
	case b.ch <- v:
	default:
		b.dropped.Add(1)
	}
}

func (b *buffer[T]) loop() {
	defer close(b.done)
	batch := make([]T, 0, maxBatch)
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	for {
		select {
		case v := <-b.ch:
			batch = append(batch, v)
			if len(batch) == maxBatch {
				batch = b.flush(context.Background(), batch)
			}
		case <-tick.C:
			batch = b.flush(context.Background(), batch)
		case done := <-b.sync:
			for len(b.ch) > 0 {
				batch = append(batch, <-b.ch)
			}
			batch = b.flush(context.Background(), batch)
			close(done)
		case <-b.stop:
			b.drain(batch)
			return
		}
	}
}

// drain sends what is left within the close deadline (b.timeout) and
// counts the rest dropped.
func (b *buffer[T]) drain(batch []T) {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	for {
		select {
		case v := <-b.ch:
			batch = append(batch, v)
			if len(batch) < maxBatch {
				continue
			}
		default:
		}
		if len(batch) == 0 {
			return
		}
		if ctx.Err() != nil {
			b.dropped.Add(int64(len(batch) + len(b.ch)))
			return
		}
		batch = b.flush(ctx, batch)
	}
}

// flush sends batch with the per-request timeout and returns it emptied.
// A failed batch is dropped and counted: a collector that is down must
// not make the work wait, and a retry would only fall further behind.
func (b *buffer[T]) flush(ctx context.Context, batch []T) []T {
	if len(batch) == 0 {
		return batch
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	err := b.send(ctx, batch)
	cancel()
	if err != nil {
		b.dropped.Add(int64(len(batch)))
		if b.fail != nil {
			b.fail(len(batch), err)
		}
	} else {
		b.exported.Add(int64(len(batch)))
	}
	clear(batch)
	return batch[:0]
}

// flushNow sends what is queued now and returns when the collector has
// answered (or the request failed).
func (b *buffer[T]) flushNow() {
	done := make(chan struct{})
	select {
	case b.sync <- done:
		<-done
	case <-b.done:
	}
}

// close sends what is queued (bounded by the timeout) and stops the loop.
func (b *buffer[T]) close() {
	b.once.Do(func() {
		b.stopped.Store(true)
		close(b.stop)
	})
	<-b.done
}
