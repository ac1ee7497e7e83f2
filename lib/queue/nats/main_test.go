package natsq

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/art-runtime/art/lib/execx"
	"github.com/art-runtime/art/lib/queue"
	"github.com/art-runtime/art/lib/queue/nats/natstest"
	"github.com/art-runtime/art/lib/queue/worker"
)

// The test binary doubles as a nats-server process and as an artq worker
// process, so that tests can kill either with SIGKILL.
const modeEnv = "ARTQ_NATSTEST"

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "server":
		os.Exit(serverMain())
	case "worker":
		os.Exit(workerMain())
	case "batches":
		os.Exit(batchesMain())
	}
	goleak.VerifyTestMain(m)
}

func serverMain() int {
	port, _ := strconv.Atoi(os.Getenv("ARTQ_NATSTEST_PORT"))
	srv, err := natstest.Serve(os.Getenv("ARTQ_NATSTEST_STORE"), port, natstest.Options{NoSync: os.Getenv("ARTQ_NATSTEST_NOSYNC") != ""})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("ready %s\n", srv.ClientURL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	srv.Shutdown()
	srv.WaitForShutdown()
	return 0
}

// workerMain runs queue.Work against a NATS queue with a run function that
// runs nothing: it appends "TASK ATTEMPT PID" to a run log, and blocks on
// the task named by ARTQ_NATSTEST_BLOCK until killed.
func workerMain() int {
	env := os.Getenv
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	lease, _ := time.ParseDuration(env("ARTQ_NATSTEST_LEASE"))
	b, err := Open(ctx, env("ARTQ_NATSTEST_URL"), env("ARTQ_NATSTEST_QUEUE"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer b.Close()
	q, err := queue.Open(ctx, b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queue:", err)
		return 1
	}
	pol, err := worker.Policy("", execx.Narrowing{Allow: []string{"true"}, Workspace: os.TempDir()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	runlog, block := env("ARTQ_NATSTEST_RUNLOG"), env("ARTQ_NATSTEST_BLOCK")
	var mu sync.Mutex
	run := func(ctx context.Context, p *execx.Policy, t *execx.Task, opt execx.Options) (*execx.Result, error) {
		mu.Lock()
		f, err := os.OpenFile(runlog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %s %d\n", t.ID, t.Env.Set[worker.EnvAttempt], os.Getpid())
			f.Close()
		}
		mu.Unlock()
		if hold := env("ARTQ_NATSTEST_HOLD"); t.ID == hold {
			// The zombie test's run: it ends on its own once released, with
			// a result in hand (duration 4242 marks it), or is killed.
			os.WriteFile(runlog+".blocked", nil, 0o600)
			for {
				if _, err := os.Stat(runlog + ".release"); err == nil {
					now := time.Now()
					return &execx.Result{TaskID: t.ID, Program: t.Program, Status: execx.StatusSucceeded, StartedAt: now, EndedAt: now, DurationMS: 4242}, nil
				}
				select {
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				case <-time.After(5 * time.Millisecond):
				}
			}
		}
		if t.ID == block {
			os.WriteFile(runlog+".blocked", nil, 0o600)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}
		now := time.Now()
		return &execx.Result{TaskID: t.ID, Program: t.Program, Status: execx.StatusSucceeded, StartedAt: now, EndedAt: now}, nil
	}
	mode := worker.Drain
	if env("ARTQ_NATSTEST_MODE") == "serve" {
		mode = worker.Serve
	}
	conc, _ := strconv.Atoi(env("ARTQ_NATSTEST_CONCURRENCY"))
	stats, err := worker.Work(ctx, q, worker.Config{
		ID: env("ARTQ_NATSTEST_ID"), Policy: pol, Concurrency: max(conc, 1), Mode: mode,
		Poll: 100 * time.Millisecond, Lease: lease, Run: run,
	})
	out, _ := json.Marshal(stats)
	fmt.Println(string(out))
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "work:", err)
		return 1
	}
	return 0
}

// noRaceSleep stops a race-enabled child from sleeping a second at exit.
const noRaceSleep = "GORACE=atexit_sleep_ms=0"

// serverProc is a nats-server in a child process, to be killed with SIGKILL.
type serverProc struct {
	t      *testing.T
	dir    string
	port   int
	noSync bool
	cmd    *exec.Cmd
	url    string
}

func startServerProc(t *testing.T, noSync bool) *serverProc {
	p := &serverProc{t: t, dir: t.TempDir(), noSync: noSync}
	p.start()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *serverProc) start() {
	p.t.Helper()
	for try := 0; ; try++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), modeEnv+"=server", "ARTQ_NATSTEST_STORE="+p.dir, "ARTQ_NATSTEST_PORT="+strconv.Itoa(p.port), noRaceSleep)
		if p.noSync {
			cmd.Env = append(cmd.Env, "ARTQ_NATSTEST_NOSYNC=1")
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			p.t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			p.t.Fatal(err)
		}
		buf := make([]byte, 256)
		n, _ := out.Read(buf)
		line := strings.TrimSpace(string(buf[:n]))
		if url, ok := strings.CutPrefix(line, "ready "); ok {
			p.cmd, p.url = cmd, url
			port, _ := strconv.Atoi(url[strings.LastIndexByte(url, ':')+1:])
			p.port = port
			return
		}
		cmd.Process.Kill()
		cmd.Wait()
		if try == 20 {
			p.t.Fatalf("server process did not start: %q", line)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kill sends SIGKILL: the server gets no chance to flush anything.
func (p *serverProc) kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	p.cmd = nil
}

// workerProc is an artq worker in a child process.
type workerProc struct {
	id  string
	cmd *exec.Cmd
	out strings.Builder
	err strings.Builder
}

func startWorker(t *testing.T, url, queueName, id, runlog string, extra ...string) *workerProc {
	t.Helper()
	w := &workerProc{id: id, cmd: exec.Command(os.Args[0], "-test.run=^$")}
	w.cmd.Env = append(os.Environ(), modeEnv+"=worker", "ARTQ_NATSTEST_URL="+url, "ARTQ_NATSTEST_QUEUE="+queueName,
		"ARTQ_NATSTEST_ID="+id, "ARTQ_NATSTEST_RUNLOG="+runlog, noRaceSleep)
	w.cmd.Env = append(w.cmd.Env, extra...)
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.err
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	})
	return w
}

func (w *workerProc) wait(t *testing.T) worker.Stats {
	t.Helper()
	err := w.cmd.Wait()
	if err != nil {
		t.Fatalf("worker %s: %v\nstdout: %s\nstderr: %s", w.id, err, w.out.String(), w.err.String())
	}
	var s worker.Stats
	json.Unmarshal([]byte(strings.TrimSpace(w.out.String())), &s)
	return s
}

// runLog counts runs per "TASK ATTEMPT" in a worker run log.
func runLog(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	runs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			runs[f[0]+" "+f[1]]++
		}
	}
	return runs
}
