package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverPeer runs River on PostgreSQL: a client with a 1 ms fetch cooldown
// (its minimum) and MaxWorkers = concurrency, each job running `true`.
type riverPeer struct{}

type pgxTx = pgx.Tx

type trueArgs struct{}

func (trueArgs) Kind() string { return "true" }

type trueWorker struct {
	river.WorkerDefaults[trueArgs]
}

func (trueWorker) Work(context.Context, *river.Job[trueArgs]) error { return runTrue() }

func riverClient(ctx context.Context, c *peerConfig, workers bool) (*river.Client[pgxTx], *pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, c.target)
	if err != nil {
		return nil, nil, err
	}
	cfg := &river.Config{}
	if workers {
		w := river.NewWorkers()
		river.AddWorker(w, trueWorker{})
		cfg.Workers = w
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.c}}
		cfg.FetchCooldown = time.Millisecond
	}
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return client, pool, nil
}

func (riverPeer) reset(c *peerConfig) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.target)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return err
	}
	_, err = pool.Exec(ctx, "TRUNCATE river_job")
	return err
}

func (riverPeer) enqueue(c *peerConfig) error {
	ctx := context.Background()
	client, pool, err := riverClient(ctx, c, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	const chunk = 10000 // a parameter list per statement stays bounded
	for done := 0; done < c.n; done += chunk {
		k := min(chunk, c.n-done)
		ps := make([]river.InsertManyParams, k)
		for i := range ps {
			ps[i] = river.InsertManyParams{Args: trueArgs{}}
		}
		if _, err := client.InsertManyFast(ctx, ps); err != nil {
			return err
		}
	}
	return nil
}

func (riverPeer) drain(c *peerConfig) error {
	ctx := context.Background()
	client, pool, err := riverClient(ctx, c, true)
	if err != nil {
		return err
	}
	defer pool.Close()
	events, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		return err
	}
	for seen := 0; seen < c.n; seen++ {
		ev := <-events
		if ev.Kind != river.EventKindJobCompleted {
			return fmt.Errorf("job %d: %s", ev.Job.ID, ev.Kind)
		}
	}
	return client.Stop(ctx)
}

func (riverPeer) count(c *peerConfig) (int, error) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.target)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	var n int
	err = pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'available'").Scan(&n)
	return n, err
}
