package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hibiken/asynq"
)

// asynqPeer runs asynq on Redis (the script starts redis-server with
// appendonly yes, appendfsync always): a server with Concurrency =
// concurrency whose handler runs `true`. asynq has no batch insert, so the
// batch enqueue is 64 concurrent Enqueue calls (Redis then shares an fsync
// among the writes of one event-loop turn).
type asynqPeer struct{}

const asynqKind = "true"

func (asynqPeer) reset(c *peerConfig) error {
	i := asynq.NewInspector(asynq.RedisClientOpt{Addr: c.target})
	defer i.Close()
	qs, err := i.Queues()
	if err != nil {
		return err
	}
	for _, q := range qs {
		if err := i.DeleteQueue(q, true); err != nil {
			return fmt.Errorf("delete queue %s: %w", q, err)
		}
	}
	return nil
}

func (asynqPeer) enqueue(c *peerConfig) error {
	cl := asynq.NewClient(asynq.RedisClientOpt{Addr: c.target, PoolSize: 64})
	defer cl.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(c.n) {
				if _, err := cl.Enqueue(asynq.NewTask(asynqKind, nil), asynq.MaxRetry(0)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func (asynqPeer) drain(c *peerConfig) error {
	var done atomic.Int64
	finished := make(chan struct{})
	var failed atomic.Value
	srv := asynq.NewServer(asynq.RedisClientOpt{Addr: c.target}, asynq.Config{
		Concurrency: c.c,
		LogLevel:    asynq.WarnLevel,
	})
	h := asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		err := runTrue()
		if err != nil {
			failed.Store(err)
		}
		if done.Add(1) == int64(c.n) {
			close(finished)
		}
		return err
	})
	if err := srv.Start(h); err != nil {
		return err
	}
	<-finished
	srv.Shutdown() // waits for the handlers, records their results
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

func (asynqPeer) count(c *peerConfig) (int, error) {
	i := asynq.NewInspector(asynq.RedisClientOpt{Addr: c.target})
	defer i.Close()
	qi, err := i.GetQueueInfo("default")
	if err != nil {
		return 0, err
	}
	return qi.Pending, nil
}
