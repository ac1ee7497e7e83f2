package web

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
)

// The JSON API: the documents the CLI prints, from the same library code.

// QueueEntry is one queue of GET /api/queues: its name and its
// QueueSummary (artq status --summary).
type QueueEntry struct {
	Name    string         `json:"name"`
	Summary *queue.Summary `json:"summary,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// queueEntries reads every shown queue's summary.
func (s *Server) queueEntries(ctx context.Context) []QueueEntry {
	var out []QueueEntry
	for _, name := range s.queueNames() {
		e := QueueEntry{Name: name}
		b, err := s.open(name)
		if err == nil {
			var sum queue.Summary
			sum, err = summary(ctx, b)
			b.Close()
			e.Summary = &sum
		}
		if err != nil {
			e.Summary, e.Error = nil, err.Error()
		}
		out = append(out, e)
	}
	return out
}

func (s *Server) apiQueues(w http.ResponseWriter, r *http.Request) {
	list := s.queueEntries(r.Context())
	if list == nil {
		list = []QueueEntry{}
	}
	writeJSON(w, list)
}

func (s *Server) apiQueue(w http.ResponseWriter, r *http.Request) {
	b, err := s.open(r.PathValue("queue"))
	if err != nil {
		apiError(w, err)
		return
	}
	defer b.Close()
	sum, err := summary(r.Context(), b)
	if err != nil {
		apiError(w, err)
		return
	}
	writeJSON(w, &sum)
}

// taskQuery reads ?state=&q=&page= of a task list.
func taskQuery(r *http.Request) (queue.TaskState, string, int, error) {
	q := r.URL.Query()
	state := queue.TaskState(q.Get("state"))
	if state != "" && !slices.Contains(queue.States, state) {
		return "", "", 0, &badRequest{"state " + strconv.Quote(string(state)) + ": want queued, running, succeeded, failed or cancelled"}
	}
	page := 0
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 1<<20 {
			return "", "", 0, &badRequest{"page " + strconv.Quote(p) + ": want a number from 0"}
		}
		page = n
	}
	return state, q.Get("q"), page, nil
}

// apiTasks is one page of TaskStatus documents as JSON Lines (artq status
// --state STATE); a Link header names the next page.
func (s *Server) apiTasks(w http.ResponseWriter, r *http.Request) {
	state, search, page, err := taskQuery(r)
	if err != nil {
		apiError(w, err)
		return
	}
	b, err := s.open(r.PathValue("queue"))
	if err != nil {
		apiError(w, err)
		return
	}
	defer b.Close()
	p, err := s.taskPage(r.Context(), b, state, search, page)
	if err != nil {
		apiError(w, err)
		return
	}
	if p.More {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", "<"+r.URL.Path+"?"+q.Encode()+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	for i := range p.Tasks {
		writeLine(bw, &p.Tasks[i])
	}
	bw.Flush()
}

// apiTask is the TaskStatus of artq status ID -o json: history and kept
// output tail included.
func (s *Server) apiTask(w http.ResponseWriter, r *http.Request) {
	tv, ok := s.task(w, r, apiError)
	if ok {
		writeJSON(w, &tv.Status)
	}
}

// apiTranscript is the task's agent transcript, record by record (JSON
// Lines, as stored).
func (s *Server) apiTranscript(w http.ResponseWriter, r *http.Request) {
	tv, ok := s.task(w, r, apiError)
	if !ok {
		return
	}
	if tv.Transcript == nil {
		apiError(w, &notFound{"transcript of task " + tv.Status.ID})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	for i := range tv.Transcript {
		writeLine(bw, &tv.Transcript[i])
	}
	bw.Flush()
}

// task reads the task a request names, reporting a failure with fail.
func (s *Server) task(w http.ResponseWriter, r *http.Request, fail func(http.ResponseWriter, error)) (*TaskView, bool) {
	name := r.PathValue("queue")
	b, err := s.open(name)
	if err != nil {
		fail(w, err)
		return nil, false
	}
	defer b.Close()
	release, err := s.acquire(r.Context())
	if err != nil {
		fail(w, err)
		return nil, false
	}
	defer release()
	tv, err := s.taskView(r.Context(), name, b, r.PathValue("id"))
	if err != nil {
		fail(w, err)
		return nil, false
	}
	return tv, true
}

// MaxLogEvents bounds one GET /api/queues/Q/log.
const MaxLogEvents = 10000

// apiLog is QueueEvent documents (artq log -o json) after ?after=SEQ, at
// most ?limit=N (default and maximum MaxLogEvents).
func (s *Server) apiLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	after, err := strconv.ParseUint(q.Get("after"), 10, 64)
	if q.Get("after") != "" && err != nil {
		apiError(w, &badRequest{"after: want a sequence number"})
		return
	}
	limit := MaxLogEvents
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxLogEvents {
			apiError(w, &badRequest{"limit: want 1 to " + strconv.Itoa(MaxLogEvents)})
			return
		}
	}
	b, err := s.open(r.PathValue("queue"))
	if err != nil {
		apiError(w, err)
		return
	}
	defer b.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriterSize(w, 1<<16)
	defer bw.Flush()
	var line []byte
	n := 0
	err = queue.Follow(r.Context(), b, queue.FollowOptions{After: after}, func(ev *queue.Event) error {
		if n == limit {
			return errPageFull
		}
		n++
		line = append(queue.AppendEventDoc(line[:0], ev), '\n')
		_, err := bw.Write(line)
		return err
	})
	if err != nil && err != errPageFull && n == 0 {
		apiError(w, err)
	}
}

// apiGoals is every journal, one compact JSON line each.
func (s *Server) apiGoals(w http.ResponseWriter, r *http.Request) {
	js, _ := s.goals()
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	for _, j := range js {
		writeLine(bw, j)
	}
	bw.Flush()
}

// apiGoal is the journal exactly as stored (artgoal show).
func (s *Server) apiGoal(w http.ResponseWriter, r *http.Request) {
	j, err := s.goalOf(r.PathValue("id"))
	if err != nil {
		apiError(w, err)
		return
	}
	data, err := j.Marshal()
	if err != nil {
		apiError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

// eventQuery reads ?sink=&subject=&type=&n= of the events page and API.
type eventQuery struct {
	Sink    int
	Path    string
	Subject string
	Type    string
	N       int
}

// MaxEvents bounds the events one request returns.
const MaxEvents = 1000

func (s *Server) eventQuery(r *http.Request) (*eventQuery, error) {
	q := r.URL.Query()
	e := &eventQuery{Subject: q.Get("subject"), Type: q.Get("type"), N: 50}
	if v := q.Get("sink"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, &badRequest{"sink: want the sink's number"}
		}
		e.Sink = n
	}
	if v := q.Get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxEvents {
			return nil, &badRequest{"n: want 0 to " + strconv.Itoa(MaxEvents)}
		}
		e.N = n
	}
	if len(s.cfg.Sinks) == 0 {
		return e, nil
	}
	p, err := s.sink(e.Sink)
	if err != nil {
		return nil, err
	}
	e.Path = p
	return e, nil
}

// match reports whether a record passes the type filter (the subject
// filter is obs.Tail's).
func (e *eventQuery) match(line []byte) bool {
	if e.Type == "" {
		return true
	}
	env, _, err := obs.ParseEnvelope(line)
	return err == nil && env.Type() == e.Type
}

// lastEvents are the last e.N records of the sink of subject e.Subject,
// then filtered by type (artobs tail -n N --subject S).
func lastEvents(ctx context.Context, e *eventQuery) ([][]byte, error) {
	var out [][]byte
	if e.Path == "" {
		return nil, nil
	}
	err := obs.Tail(ctx, e.Path, obs.TailOptions{Subject: e.Subject, Lines: e.N}, func(line []byte) error {
		if e.match(line) {
			out = append(out, append([]byte(nil), line...))
		}
		return nil
	})
	return out, err
}

// apiEvents is the sink's last records as stored (artobs tail).
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	e, err := s.eventQuery(r)
	if err != nil {
		apiError(w, err)
		return
	}
	lines, err := lastEvents(r.Context(), e)
	if err != nil {
		apiError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	bw.Flush()
}

// streamEvents is the live tail: server-sent events, one `data:` line per
// record appended to the sink after the request (filtered by subject and
// type), and a comment every 15 s to keep proxies from closing it.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	e, err := s.eventQuery(r)
	if err != nil {
		apiError(w, err)
		return
	}
	if e.Path == "" {
		apiError(w, &notFound{"sink"})
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		http.Error(w, "too many live tails open", http.StatusServiceUnavailable)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		apiError(w, &badRequest{"streaming unsupported"})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(": artobs live tail\n\n"))
	fl.Flush()
	ctx := r.Context()
	lines := make(chan []byte, 64)
	go func() {
		defer close(lines)
		obs.Tail(ctx, e.Path, obs.TailOptions{Subject: e.Subject, Lines: 0, Follow: true, Poll: 100 * time.Millisecond}, func(line []byte) error {
			if !e.match(line) {
				return nil
			}
			select {
			case lines <- append([]byte(nil), line...):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return
			}
			// A record is one line of JSON: no newline can end the field.
			w.Write([]byte("data: "))
			w.Write(l)
			w.Write([]byte("\n\n"))
			fl.Flush()
		case <-keep.C:
			w.Write([]byte(": keep-alive\n\n"))
			fl.Flush()
		case <-ctx.Done():
			for range lines {
			}
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := jsonx.Marshal(v)
	if err != nil {
		apiError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(data, '\n'))
}

func writeLine(w *bufio.Writer, v any) {
	data, err := jsonx.Marshal(v)
	if err == nil {
		w.Write(data)
		w.WriteByte('\n')
	}
}

// apiError answers {"error": "..."} with the error's status.
func apiError(w http.ResponseWriter, err error) {
	data, _ := jsonx.Marshal(map[string]string{"error": err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(errStatus(err))
	w.Write(append(data, '\n'))
}
