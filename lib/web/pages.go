package web

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"log"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/art-runtime/art/lib/goal"
	"github.com/art-runtime/art/lib/goal/goalobs"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/queue"
)

// pages are the HTML templates, each parsed with the layout: html/template
// escapes every value by its context (text, attribute, URL), and a URL
// that is not http, https or mailto becomes #ZgotmplZ.
var pages = map[string]*template.Template{}

var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ms": func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() },
	"json": func(v any) string {
		var data []byte
		switch x := v.(type) {
		case []byte:
			data = x
		case json.RawMessage:
			data = x
		default:
			data, _ = json.Marshal(x)
		}
		var out bytes.Buffer
		if json.Indent(&out, data, "", "  ") != nil {
			return string(data)
		}
		return out.String()
	},
	"get": func(raw json.RawMessage, path string) string { return gjson.GetBytes(raw, path).String() },
	"deref": func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	},
	"derefInt": func(p *int) string {
		if p == nil {
			return ""
		}
		return strconv.Itoa(*p)
	},
	"query": func(kv ...string) template.URL {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] != "" {
				q.Set(kv[i], kv[i+1])
			}
		}
		return template.URL("?" + q.Encode())
	},
	"inc":      func(n int) int { return n + 1 },
	"dec":      func(n int) int { return n - 1 },
	"phases":   func() []goal.Phase { return goal.Phases },
	"states":   func() []queue.TaskState { return queue.States },
	"str":      func(v any) string { return toString(v) },
	"taskLink": taskLink,
}

// toString is a value of a string type (a state, a phase, an evidence
// type, a severity) as its text, anything else as JSON.
func toString(v any) string {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return rv.String()
	}
	data, _ := json.Marshal(v)
	return string(data)
}

func init() {
	for _, p := range []string{"queues", "queue", "tasks", "task", "goals", "goal", "events", "error"} {
		pages[p] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/templates/layout.html", "assets/templates/"+p+".html"))
	}
}

// render writes page with data, or a plain 500 if the template fails
// (which a test covers for every page).
func render(w http.ResponseWriter, page, title string, data any) {
	var buf bytes.Buffer
	err := pages[page].Execute(&buf, map[string]any{"Title": title, "Page": page, "D": data})
	if err != nil {
		log.Printf("artobs-web: render %s: %v", page, err)
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// pageError renders an error page with the error's status.
func pageError(w http.ResponseWriter, err error) {
	var buf bytes.Buffer
	status := errStatus(err)
	pages["error"].Execute(&buf, map[string]any{"Title": http.StatusText(status), "Page": "error", "D": err.Error()})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func (s *Server) pageQueues(w http.ResponseWriter, r *http.Request) {
	render(w, "queues", "Queues", s.queueEntries(r.Context()))
}

func (s *Server) pageQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	b, err := s.open(name)
	if err != nil {
		pageError(w, err)
		return
	}
	defer b.Close()
	sum, err := summary(r.Context(), b)
	if err != nil {
		pageError(w, err)
		return
	}
	chart, err := s.chart(r.Context(), name, b, sum.Seq)
	if err != nil {
		pageError(w, err)
		return
	}
	render(w, "queue", "Queue "+name, map[string]any{"Name": name, "Summary": sum, "Chart": chart})
}

func (s *Server) pageTasks(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	state, search, page, err := taskQuery(r)
	if err != nil {
		pageError(w, err)
		return
	}
	b, err := s.open(name)
	if err != nil {
		pageError(w, err)
		return
	}
	defer b.Close()
	// An id searched for that exists opens its task.
	if search != "" && queue.ValidName("id", search) == nil {
		if v := loadIndex(r.Context(), b); v != nil {
			t, _, err := v.Task(search)
			v.Close()
			if err == nil && t != nil && (state == "" || t.State == state) && page == 0 {
				http.Redirect(w, r, "/queues/"+url.PathEscape(name)+"/tasks/"+url.PathEscape(search), http.StatusSeeOther)
				return
			}
		}
	}
	p, err := s.taskPage(r.Context(), b, state, search, page)
	if err != nil {
		pageError(w, err)
		return
	}
	render(w, "tasks", "Tasks of "+name, map[string]any{
		"Name": name, "State": string(state), "Search": search, "Page": page, "P": p,
	})
}

func (s *Server) pageTask(w http.ResponseWriter, r *http.Request) {
	tv, ok := s.task(w, r, pageError)
	if !ok {
		return
	}
	name := r.PathValue("queue")
	corr := queue.Correlation(name, tv.Status.ID)
	events := s.relatedEvents(r.Context(), 100, func(env *obs.Envelope) bool {
		return env.Subject() == corr || env.Correlation() == corr
	})
	render(w, "task", "Task "+tv.Status.ID, map[string]any{"Name": name, "T": tv, "SinkEvents": events})
}

func (s *Server) pageGoals(w http.ResponseWriter, r *http.Request) {
	js, problems := s.goals()
	var ps []string
	for _, p := range problems {
		ps = append(ps, p.Error())
	}
	render(w, "goals", "Goals", map[string]any{"Goals": js, "Problems": ps})
}

func (s *Server) pageGoal(w http.ResponseWriter, r *http.Request) {
	j, err := s.goalOf(r.PathValue("id"))
	if err != nil {
		pageError(w, err)
		return
	}
	subject := goalobs.GoalSubject(j.ID)
	events := s.relatedEvents(r.Context(), 200, func(env *obs.Envelope) bool { return env.Subject() == subject })
	render(w, "goal", "Goal "+j.ID, map[string]any{"J": j, "Events": events})
}

func (s *Server) pageEvents(w http.ResponseWriter, r *http.Request) {
	e, err := s.eventQuery(r)
	if err != nil {
		pageError(w, err)
		return
	}
	lines, err := lastEvents(r.Context(), e)
	if err != nil {
		pageError(w, err)
		return
	}
	render(w, "events", "Events", map[string]any{"Q": e, "Sinks": s.cfg.Sinks, "Events": envelopes(lines)})
}

// relatedEvents are the last n records of each sink that match, among
// the sink's last ScanEvents records (a sink that cannot be read shows
// nothing): a task's are those of its subject and those correlated with
// it (the agent run's, under a worker), a goal's those of its subject.
func (s *Server) relatedEvents(ctx context.Context, n int, match func(*obs.Envelope) bool) []*obs.Envelope {
	var out []*obs.Envelope
	for i, p := range s.cfg.Sinks {
		lines, _ := lastEvents(ctx, &eventQuery{Sink: i, Path: p, N: ScanEvents})
		var found []*obs.Envelope
		for _, env := range envelopes(lines) {
			if match(env) {
				found = append(found, env)
			}
		}
		out = append(out, found[max(0, len(found)-n):]...)
	}
	return out
}

// ScanEvents is how far back in each sink a task or goal page looks for
// its events.
const ScanEvents = 5000

// envelopes parses records for a page (one that does not parse is left
// out: artobs verify reports it).
func envelopes(lines [][]byte) []*obs.Envelope {
	var out []*obs.Envelope
	for _, l := range lines {
		if env, _, err := obs.ParseEnvelope(l); err == nil {
			out = append(out, env)
		}
	}
	return out
}

// taskLink is the task page of an event subject queue/Q/task/ID, or ""
// for any other subject (both names must be valid queue and task names,
// so the link cannot leave the site).
func taskLink(subject string) string {
	rest, ok := strings.CutPrefix(subject, "queue/")
	if !ok {
		return ""
	}
	q, id, ok := strings.Cut(rest, "/task/")
	if !ok || queue.ValidName("queue", q) != nil || queue.ValidName("id", id) != nil {
		return ""
	}
	return "/queues/" + q + "/tasks/" + id
}
