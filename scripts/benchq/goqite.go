package main

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"maragu.dev/goqite"
	"maragu.dev/goqite/jobs"
	_ "modernc.org/sqlite"
)

// goqitePeer runs goqite's job runner on SQLite in WAL mode with
// synchronous=FULL (every commit fsync'd), Limit = concurrency and a 1 ms
// poll interval, each job running `true`.
type goqitePeer struct{}

const goqiteSchema = `
create table if not exists goqite (
  id text primary key default ('m_' || lower(hex(randomblob(16)))),
  created text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  updated text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  queue text not null,
  body blob not null,
  timeout text not null default (strftime('%Y-%m-%dT%H:%M:%fZ')),
  received integer not null default 0,
  priority integer not null default 0
) strict;
create trigger if not exists goqite_updated_timestamp after update on goqite begin
  update goqite set updated = strftime('%Y-%m-%dT%H:%M:%fZ') where id = old.id;
end;
create index if not exists goqite_queue_priority_created_idx on goqite (queue, priority desc, created);
`

func goqiteOpen(c *peerConfig) (*sql.DB, *goqite.Queue, error) {
	db, err := sql.Open("sqlite", "file:"+c.target+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1) // SQLite has one writer; goqite's docs do the same
	db.SetMaxIdleConns(1)
	if _, err := db.Exec(goqiteSchema); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, goqite.New(goqite.NewOpts{DB: db, Name: "jobs", MaxReceive: 1}), nil
}

func (goqitePeer) reset(c *peerConfig) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(c.target + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	db, _, err := goqiteOpen(c)
	if err != nil {
		return err
	}
	return db.Close()
}

func (goqitePeer) enqueue(c *peerConfig) error {
	db, q, err := goqiteOpen(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	for range c.n {
		if _, err := jobs.CreateTx(ctx, tx, q, "true", goqite.Message{}); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (goqitePeer) drain(c *peerConfig) error {
	db, q, err := goqiteOpen(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := jobs.NewRunner(jobs.NewRunnerOpts{Limit: c.c, PollInterval: time.Millisecond, Queue: q})
	var done atomic.Int64
	var failed atomic.Value
	r.Register("true", func(context.Context, []byte) error {
		err := runTrue()
		if err != nil {
			failed.Store(err)
		}
		if done.Add(1) == int64(c.n) {
			// Start returns once every job, its message deleted, is done.
			cancel()
		}
		return err
	})
	r.Start(ctx)
	if err, _ := failed.Load().(error); err != nil {
		return err
	}
	return nil
}

func (goqitePeer) count(c *peerConfig) (int, error) {
	db, _, err := goqiteOpen(c)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`select count(*) from goqite where queue = 'jobs'`).Scan(&n)
	return n, err
}
