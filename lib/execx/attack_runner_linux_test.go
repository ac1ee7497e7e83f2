//go:build linux

package execx

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/jsonx"
)

// attackRunner is how the test starts a runner to attack: this test
// binary again, configured by EXECX_ATTACK_RUNNER, holding secrets an
// attacker wants (an environment variable, its stdin, a canary in its
// memory, its stdout) and counting the SIGUSR1s it receives. It runs the
// task under Run in one of the modes, or under bubblewrap for comparison,
// and prints a REPORT line of what it saw.
type attackRunner struct {
	Mode    string        `json:"mode"` // none, landlock, strict, bwrap
	WS      string        `json:"ws"`
	Bin     string        `json:"bin"` // the directory with the attack program
	Program string        `json:"program"`
	Args    []string      `json:"args"`
	Targets attackTargets `json:"targets"` // Runner and Canary are filled in by the runner
	TTY     bool          `json:"tty"`     // replace "{tty}" in Args by the runner's terminal
	// Pool: run the task on a supervisor of a Pool, with another one of
	// the pool idle beside it.
	Pool bool `json:"pool,omitempty"`
	// Network is the policy's network mode (empty: the backend's default),
	// AllowHosts its allowlist, Hosts what the proxy resolves names to
	// (the test's servers; never the system resolver), Programs more
	// programs the policy allows, Env variables the task gets, and Delay
	// a pause before the task starts.
	Network    NetworkMode       `json:"network,omitempty"`
	AllowHosts []string          `json:"allow_hosts,omitempty"`
	Hosts      map[string]string `json:"hosts,omitempty"`
	Programs   []string          `json:"programs,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	MaxConns   int               `json:"max_conns,omitempty"`
	Path       []string          `json:"path,omitempty"` // more directories programs are looked up in
	// Grace, if set, is the task's grace for its output pipes after the
	// program exits (default 2 s).
	Grace time.Duration `json:"grace,omitempty"`
	// RefuseNS: every start of a supervisor in namespaces fails, as on a
	// kernel that refuses them (EPERM).
	RefuseNS bool `json:"refuse_ns,omitempty"`
}

type attackReport struct {
	Output   string         `json:"output"`
	Usr1     int64          `json:"usr1"`
	Canary   string         `json:"canary"`
	Enforced []string       `json:"enforced"`
	Network  *NetworkReport `json:"network,omitempty"`
	Error    string         `json:"error,omitempty"`
	Status   string         `json:"status,omitempty"`
	Leftover int            `json:"leftover,omitempty"`
	Killed   int            `json:"killed_at_end,omitempty"`
}

// runnerCanary is what mem-write-runner tries to overwrite.
var runnerCanary = [8]byte{'C', 'A', 'N', 'A', 'R', 'Y', '-', '-'}

func attackRunnerMain(cfgJSON string) int {
	var cfg attackRunner
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Println("runner: bad config:", err)
		return 2
	}
	var usr1 atomic.Int64
	sigs := make(chan os.Signal, 16)
	// SIGUSR2 is the runner's own marker (see below), never an attack's.
	signal.Notify(sigs, unix.SIGUSR1, unix.SIGUSR2)
	marked := make(chan struct{})
	go func() {
		for sig := range sigs {
			if sig == unix.SIGUSR2 {
				close(marked)
				continue
			}
			usr1.Add(1)
		}
	}()
	cfg.Targets.Runner = os.Getpid()
	cfg.Targets.Canary = uint64(uintptr(unsafe.Pointer(&runnerCanary[0])))
	args := append([]string(nil), cfg.Args...)
	for i, a := range args {
		switch a {
		case "{targets}":
			b, _ := json.Marshal(cfg.Targets)
			args[i] = string(b)
		case "{tty}":
			args[i], _ = os.Readlink("/proc/self/fd/0")
		}
	}
	if cfg.RefuseNS {
		startNamespaced = func(string, []string, *os.ProcAttr) (int, <-chan exitInfo, error) { return 0, nil, syscall.EPERM }
		forkServeNS = func(string, []string, *syscall.ProcAttr) (int, error) { return 0, syscall.EPERM }
	}
	var rep attackReport
	if cfg.Mode == "bwrap" {
		prog := filepath.Join(cfg.Bin, cfg.Program)
		if cfg.Program == "sh" {
			prog = "/bin/sh"
		}
		bw := []string{"--unshare-all", "--new-session", "--die-with-parent", "--clearenv",
			"--setenv", "PATH", cfg.Bin + ":/usr/bin:/bin",
			"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
			"--bind", cfg.WS, cfg.WS, "--chdir", cfg.WS, prog}
		cmd := exec.Command("bwrap", append(bw, args...)...)
		out, err := cmd.CombinedOutput()
		rep.Output = string(out)
		if err != nil {
			rep.Error = err.Error()
		}
	} else {
		p := &Policy{Allow: append([]string{attackName, "sh"}, cfg.Programs...), Workspace: cfg.WS,
			Path: append(append([]string{cfg.Bin}, cfg.Path...), "/usr/bin", "/bin"), Isolation: Isolation(cfg.Mode),
			Network: NetworkPolicy{Mode: cfg.Network, Allow: cfg.AllowHosts, MaxConnections: cfg.MaxConns}}
		p.Default()
		task := NewTask(cfg.Program, args...)
		for k, v := range cfg.Env {
			p.EnvAllow = append(p.EnvAllow, k)
			if task.Env.Set == nil {
				task.Env.Set = map[string]string{}
			}
			task.Env.Set[k] = v
		}
		var opt Options
		if cfg.Hosts != nil {
			opt.Resolve = testResolver(cfg.Hosts)
		}
		if cfg.Pool {
			opt.Pool = NewPool(2)
			defer opt.Pool.Close() // its kept temp dirs with it
			warmPool(p, opt)
		}
		task.Limits.Grace = jsonx.Duration(cfg.Grace)
		res, err := Run(context.Background(), p, task, opt)
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Output, rep.Enforced, rep.Network = res.Output, res.Isolation.Enforced, res.Network
			rep.Status, rep.Leftover, rep.Killed = string(res.Status), res.Leftover, res.KilledAtEnd
		}
	}
	// A SIGUSR1 the task sent is pending on this process once its kill
	// returned, but os/signal hands it to the channel asynchronously: under
	// load the count could be read before it arrives. Signal a marker to
	// ourselves and wait for it: the runtime delivers a pending signal of a
	// lower number (SIGUSR1) before a higher one (SIGUSR2), and one caught
	// earlier before one caught later, so once the marker is seen every
	// SIGUSR1 sent before it is counted.
	_ = unix.Kill(os.Getpid(), unix.SIGUSR2)
	select {
	case <-marked:
	case <-time.After(10 * time.Second):
		rep.Error += " (the runner's SIGUSR2 marker never arrived)"
	}
	rep.Usr1 = usr1.Load()
	rep.Canary = string(runnerCanary[:])
	b, _ := json.Marshal(rep)
	fmt.Printf("REPORT %s\n", b)
	return 0
}

// warmPool leaves two supervisors of opt.Pool idle: two short tasks at
// once, each on its own.
func warmPool(p *Policy, opt Options) {
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = Run(context.Background(), p, NewTask("sh", "-c", "sleep 0.2"), opt)
		}()
	}
	wg.Wait()
}

// testResolver resolves the names in hosts (name to address) and nothing
// else: a test never sends a listed name to a real resolver.
func testResolver(hosts map[string]string) func(context.Context, string) ([]string, error) {
	return func(_ context.Context, name string) ([]string, error) {
		a, ok := hosts[name]
		if !ok {
			return nil, fmt.Errorf("%s: not a test host", name)
		}
		return []string{a}, nil
	}
}
