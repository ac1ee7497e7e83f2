package execobs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
)

func TestMain(m *testing.M) {
	if execx.IsShim() {
		os.Exit(execx.RunShim())
	}
	goleak.VerifyTestMain(m)
}

func attrsOf(t *testing.T, env *obs.Envelope) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(env.Attrs(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func policy(t *testing.T, allow ...string) *execx.Policy {
	t.Helper()
	p := &execx.Policy{TypeMeta: jsonx.Meta(execx.KindPolicy), Allow: allow, Workspace: t.TempDir(), Path: []string{"/usr/bin", "/bin"}}
	p.Default()
	return p
}

func TestRunTaskRecordsStartAndFinish(t *testing.T) {
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	defer em.Close()
	r := TaskRunner{Emitter: em, Correlation: "queue/default"}
	task := &execx.Task{TypeMeta: jsonx.Meta(execx.KindTask), ID: "t1", Program: "sh",
		Args: []string{"-c", "exit 3", "--token", "hunter2-should-not-appear"},
		Env:  execx.TaskEnv{Set: map[string]string{"API_KEY": "sk_live_0123456789abcdefghij"}}}
	p := policy(t, "sh")
	p.EnvAllow = append(p.EnvAllow, "API_KEY")
	res, err := r.RunTask(context.Background(), p, task, execx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 {
		t.Fatalf("result exit %d; want the child's 3", res.ExitCode)
	}
	envs := mem.Envelopes()
	if len(envs) != 2 {
		t.Fatalf("%d events; want started and finished", len(envs))
	}
	started, finished := envs[0], envs[1]
	if started.Type() != TypeTaskStarted || finished.Type() != TypeTaskFinished || started.Subject() != "task/t1" ||
		finished.Seq() != 2 || finished.Causation() != started.ID() || finished.Correlation() != "queue/default" || started.Role() != obs.RoleRuntime {
		t.Errorf("events: %s\n%s", started.Attrs(), finished.Attrs())
	}
	for _, env := range envs {
		line, _ := env.MarshalJSON()
		if strings.Contains(string(line), "hunter2") || strings.Contains(string(line), "sk_live_") {
			t.Errorf("argument or environment value in an event: %s", line)
		}
	}
	a := attrsOf(t, started)
	if a["argc"] != float64(5) || a["program"] != "sh" || a["env_set"].([]any)[0] != "API_KEY" {
		t.Errorf("started attrs = %v", a)
	}
	f := attrsOf(t, finished)
	ev, _ := f["error"].(map[string]any)
	if f["status"] != "failed" || f["exit_code"] != float64(3) || ev["class"] != "failed" || ev["exit_code"] != float64(3) {
		t.Errorf("finished attrs = %v", f)
	}
}

// TestTerminalEventSurvivesTimeoutAndCancel: a run cut short by its own
// timeout, the caller's deadline or the caller's cancellation still gets
// its task.finished, with distinct error classes.
func TestTerminalEventSurvivesTimeoutAndCancel(t *testing.T) {
	p := policy(t, "sleep")
	tests := []struct {
		name  string
		ctx   func() (context.Context, context.CancelFunc)
		limit time.Duration
		want  ErrorClass
		code  float64
	}{
		{"task timeout", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, 100 * time.Millisecond, ClassTimeout, 124},
		{"caller deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, 0, ClassTimeout, 124},
		{"caller cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, 0, ClassCancelled, 130},
	}
	for _, tt := range tests {
		mem := obs.NewMemory()
		em := obs.New(obs.Options{}, mem)
		ctx, cancel := tt.ctx()
		task := &execx.Task{TypeMeta: jsonx.Meta(execx.KindTask), ID: "slow", Program: "sleep", Args: []string{"30"},
			Limits: execx.Limits{Timeout: jsonx.Duration(tt.limit), KillAfter: jsonx.Duration(100 * time.Millisecond)}}
		res, err := TaskRunner{Emitter: em}.RunTask(ctx, p, task, execx.Options{})
		cancel()
		em.Close()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		envs := mem.Envelopes()
		if len(envs) != 2 {
			t.Fatalf("%s: %d events; want the terminal one recorded too (result %s)", tt.name, len(envs), res.Status)
		}
		f := attrsOf(t, envs[1])
		ev, _ := f["error"].(map[string]any)
		if ev["class"] != string(tt.want) || ev["exit_code"] != tt.code {
			t.Errorf("%s: error evidence %v (status %v); want class %s code %v", tt.name, ev, f["status"], tt.want, tt.code)
		}
	}
}

func TestRunTaskRefusedStillRecorded(t *testing.T) {
	mem := obs.NewMemory()
	em := obs.New(obs.Options{}, mem)
	defer em.Close()
	task := &execx.Task{TypeMeta: jsonx.Meta(execx.KindTask), Program: "rm"}
	res, err := TaskRunner{Emitter: em}.RunTask(context.Background(), policy(t, "true"), task, execx.Options{})
	if res != nil || err == nil {
		t.Fatalf("RunTask(rm) = %v, %v; want refusal", res, err)
	}
	envs := mem.Envelopes()
	if len(envs) != 2 || envs[1].Subject() != "task/rm" {
		t.Fatalf("events %d", len(envs))
	}
	ev := attrsOf(t, envs[1])["error"].(map[string]any)
	if ev["class"] != "rejected" || ev["exit_code"] != float64(126) {
		t.Errorf("refusal evidence %v", ev)
	}
}

func TestClassify(t *testing.T) {
	bg := context.Background()
	dl, cancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer cancel()
	for _, tt := range []struct {
		ctx  context.Context
		res  *execx.Result
		err  error
		want ErrorClass
	}{
		{bg, &execx.Result{Status: execx.StatusSucceeded}, nil, ClassNone},
		{bg, &execx.Result{Status: execx.StatusTimedOut, TimedOut: true}, nil, ClassTimeout},
		{bg, &execx.Result{Status: execx.StatusCancelled, Cancelled: true}, nil, ClassCancelled},
		{dl, &execx.Result{Status: execx.StatusCancelled, Cancelled: true}, nil, ClassTimeout},
		{bg, &execx.Result{Status: execx.StatusFailed, ExitCode: 2}, nil, ClassFailed},
		{bg, nil, context.Canceled, ClassCancelled},
		{bg, nil, context.DeadlineExceeded, ClassTimeout},
		{bg, nil, errors.New("boom"), ClassError},
		{bg, nil, nil, ClassNone},
	} {
		if got, _ := Classify(tt.ctx, tt.res, tt.err); got != tt.want {
			t.Errorf("Classify(%v, %v) = %q; want %q", tt.res, tt.err, got, tt.want)
		}
	}
}
