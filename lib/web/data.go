package web

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/agent/transcript"
	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/backends"
	"github.com/art-runtime/art/lib/queue/file"
	"github.com/art-runtime/art/lib/queue/stateindex"
	"github.com/art-runtime/art/lib/queue/worker"
)

// PageSize is how many tasks a page of a queue's task list shows.
const PageSize = 50

// queueNames are the queues shown: --queue, else every file queue under
// the state home (a directory holding a log).
func (s *Server) queueNames() []string {
	if len(s.cfg.Queues) > 0 {
		return s.cfg.Queues
	}
	entries, err := os.ReadDir(filepath.Join(s.cfg.Home, "queues"))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() || queue.ValidName("queue", e.Name()) != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.cfg.Home, "queues", e.Name(), file.LogName)); err == nil {
			names = append(names, e.Name())
		}
	}
	return names
}

// open opens a shown queue read-only: it writes nothing, not even a lock
// file. A queue not shown is not found, whatever exists on disk.
func (s *Server) open(name string) (queue.Backend, error) {
	if !slices.Contains(s.queueNames(), name) {
		return nil, &notFound{"queue " + name}
	}
	return backends.Open(backends.Config{Backend: s.cfg.Backend, Queue: name, Home: s.cfg.Home, ReadOnly: true})
}

// summary is the queue's QueueSummary (artq status --summary): from the
// state index when it checks, else by replaying the log.
func summary(ctx context.Context, b queue.Backend) (queue.Summary, error) {
	if v := loadIndex(ctx, b); v != nil {
		defer v.Close()
		return v.Summary(), nil
	}
	var sum queue.Summary
	err := queue.New(b).View(ctx, func(st *queue.State) error {
		sum = queue.SummaryOf(st)
		return nil
	})
	return sum, err
}

// loadIndex is the file backend's state index, or nil (another backend, no
// index, or one that does not check: replay instead, as artq status does).
func loadIndex(ctx context.Context, b queue.Backend) *stateindex.View {
	fb, ok := b.(*file.Backend)
	if !ok {
		return nil
	}
	v, err := stateindex.Load(ctx, fb.Dir())
	if err != nil {
		return nil
	}
	return v
}

// TaskPage is one page of a queue's task list.
type TaskPage struct {
	Tasks []queue.TaskStatus
	// More: a next page exists.
	More bool
	// Indexed: read through the state index (else a replay of the log).
	Indexed bool
}

// taskPage is taskPage in a heavy slot.
func (s *Server) taskPage(ctx context.Context, b queue.Backend, state queue.TaskState, search string, page int) (*TaskPage, error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	return taskPage(ctx, b, state, search, page)
}

// errPageFull stops a scan once the page (and one more task) is found.
var errPageFull = errors.New("page full")

// taskPage lists tasks in enqueue order, those in state (any when empty)
// whose id contains search, skipping page*PageSize of them. Through the
// state index it decodes rows only until the page is full.
func taskPage(ctx context.Context, b queue.Backend, state queue.TaskState, search string, page int) (*TaskPage, error) {
	p := &TaskPage{}
	skip := page * PageSize
	add := func(t *queue.Task, program string) error {
		if search != "" && !strings.Contains(t.ID, search) {
			return nil
		}
		if skip > 0 {
			skip--
			return nil
		}
		if len(p.Tasks) == PageSize {
			p.More = true
			return errPageFull
		}
		p.Tasks = append(p.Tasks, queue.StatusWith(t, program))
		return nil
	}
	if v := loadIndex(ctx, b); v != nil {
		defer v.Close()
		err := v.Tasks(state, add)
		if err == nil || errors.Is(err, errPageFull) {
			p.Indexed = true
			return p, nil
		}
		*p, skip = TaskPage{}, page*PageSize // a damaged index: replay
	}
	var err error
	verr := queue.New(b).View(ctx, func(st *queue.State) error {
		st.Tasks(func(t *queue.Task) bool {
			if state != "" && t.State != state {
				return true
			}
			err = add(t, queue.ProgramOf(t.Manifest))
			return err == nil
		})
		return nil
	})
	if verr != nil {
		return nil, verr
	}
	if err != nil && !errors.Is(err, errPageFull) {
		return nil, err
	}
	return p, nil
}

// TaskView is everything the task page shows.
type TaskView struct {
	// Status is the TaskStatus artq status ID prints: with the attempt
	// history and, for a failed attempt, the kept output tail.
	Status queue.TaskStatus
	// Manifest is the task as enqueued (canonical JSON); absent when its
	// enqueue was compacted into the snapshot and no replay was needed.
	Manifest []byte
	// Events are the task's events in the queue's log.
	Events []*queue.Event
	// Transcript is the agent run's, when the task's arguments name a
	// --transcript FILE inside a --transcripts directory.
	Transcript     []transcript.Record
	TranscriptPath string
	TranscriptErr  string
}

// taskView reads one task: its status (index, else replay), then one pass
// over the log for its history, events and manifest.
func (s *Server) taskView(ctx context.Context, name string, b queue.Backend, id string) (*TaskView, error) {
	if err := queue.ValidName("id", id); err != nil {
		return nil, &notFound{"task " + id}
	}
	tv := &TaskView{}
	found := false
	if v := loadIndex(ctx, b); v != nil {
		t, program, err := v.Task(id)
		if err == nil && t != nil {
			tv.Status, found = queue.StatusWith(t, program), true
		}
		v.Close()
	}
	if !found {
		err := queue.New(b).View(ctx, func(st *queue.State) error {
			if t := st.Task(id); t != nil {
				tv.Status, found = queue.StatusOf(t), true
				tv.Manifest = t.Manifest
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, &notFound{"task " + id}
		}
	}
	h := &queue.History{Task: id}
	err := queue.Follow(ctx, b, queue.FollowOptions{Skipped: func(_, to uint64) { h.From = to + 1 }}, func(ev *queue.Event) error {
		if ev.Task != id {
			return nil
		}
		h.Add(ev)
		if ev.Type == queue.EventEnqueued {
			tv.Manifest = ev.Manifest
		}
		if len(tv.Events) < maxTaskEvents {
			tv.Events = append(tv.Events, ev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	tv.Status.History, tv.Status.HistoryFrom = h.Runs, h.From
	if tv.Status.State == queue.StateFailed && tv.Status.Last != nil {
		tv.Status.OutputTail = worker.ReadTail(s.tailDir(name, b), id, tv.Status.Last.Attempt)
	}
	s.readTranscript(tv)
	return tv, nil
}

// maxTaskEvents bounds the log events a task page lists.
const maxTaskEvents = 500

// tailDir is where this machine's workers keep output tails of the queue's
// failed attempts (as artq status reads them).
func (s *Server) tailDir(name string, b queue.Backend) string {
	if fb, ok := b.(*file.Backend); ok {
		return filepath.Join(fb.Dir(), "tails")
	}
	return filepath.Join(s.cfg.Home, "queues", name, "tails")
}

// TranscriptOf is the --transcript FILE a task's arguments name ("" when
// none): `--transcript FILE` or `--transcript=FILE`.
func TranscriptOf(manifest []byte) string {
	args := gjson.GetBytes(manifest, "args").Array()
	for i, a := range args {
		if v, ok := strings.CutPrefix(a.Str, "--transcript="); ok {
			return v
		}
		if a.Str == "--transcript" && i+1 < len(args) {
			return args[i+1].Str
		}
	}
	return ""
}

// readTranscript reads the task's transcript when its path, resolved
// (symbolic links too), lies inside a --transcripts directory: a task's
// arguments are attacker text and must not name any file the server can
// read.
func (s *Server) readTranscript(tv *TaskView) {
	p := TranscriptOf(tv.Manifest)
	if p == "" {
		return
	}
	tv.TranscriptPath = p
	path, ok := s.transcriptPath(p)
	if !ok {
		tv.TranscriptErr = "not inside a transcript directory the server was given: not read"
		return
	}
	recs, err := transcript.Read(path)
	if err != nil {
		tv.TranscriptErr = err.Error()
		return
	}
	tv.Transcript = recs
}

// transcriptPath resolves p and reports whether it is inside one of the
// --transcripts directories.
func (s *Server) transcriptPath(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	for _, d := range s.cfg.Dirs {
		rd, err := filepath.EvalSymlinks(d)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rd, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && rel != "." {
			return real, true
		}
	}
	return "", false
}

// goals lists the journals (artgoal list) and any that do not load.
func (s *Server) goals() ([]*goal.Journal, []error) {
	return goal.NewStore(s.cfg.Home).List()
}

// goalOf reads one journal (artgoal show).
func (s *Server) goalOf(id string) (*goal.Journal, error) {
	if goal.CheckID("goal id", id) != nil {
		return nil, &notFound{"goal " + id}
	}
	j, err := goal.NewStore(s.cfg.Home).Get(id)
	if errors.Is(err, goal.ErrNotFound) {
		return nil, &notFound{"goal " + id}
	}
	return j, err
}

// sink is the path of the sink numbered i on the command line.
func (s *Server) sink(i int) (string, error) {
	if i < 0 || i >= len(s.cfg.Sinks) {
		return "", &notFound{"sink"}
	}
	return s.cfg.Sinks[i], nil
}
