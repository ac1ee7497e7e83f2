package execx

import (
	"context"
	"errors"
	"fmt"
	"io"

	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/netproxy/account"
)

// Options are the caller's side of a run: how output and input flow and
// how the process is supervised. The Policy and Task decide everything else.
type Options struct {
	// Stream, if non-nil, receives the child's output live as well as the
	// bounded capture (the CLI's --stream). A failing Stream is dropped;
	// the capture goes on.
	Stream io.Writer
	// Stderr, if non-nil, gives the child a standard error of its own
	// instead of sharing the output pipe: a second pipe, always drained
	// (a chatty child never blocks on it), whose first StderrBytes bytes
	// are copied to Stderr as they arrive. Result.Output, OutputBytes,
	// OutputOmitted and Stream then carry standard output alone, and
	// Result.StderrBytes and StderrDropped count the other stream. The
	// grace rule covers both pipes. A failing Stderr is dropped; the pipe
	// is still drained and counted. Nil (the default): stdout and stderr
	// share one pipe and one capture, in the order they were written.
	Stderr io.Writer
	// StderrBytes caps what Stderr receives (its head, as it arrives: a
	// live log cannot be given its tail later); 0 or less means
	// DefaultStderrBytes. The cap bounds the caller's sink, not memory:
	// nothing of stderr is kept.
	StderrBytes int64
	// Supervised puts the task under its own per-task supervisor (the
	// re-exec shim staying alive as subreaper and mini-init) even with
	// isolation none. A process that runs several tasks at once (the queue
	// worker, the agent) must set it so one task's orphans are never
	// confused with another's. On Linux every task has a supervisor (its
	// own, or with Pool one lent for the run) whatever this says (it is what kills the task when the runner is
	// killed, and the only process that may hold the task's restrictions
	// apart from the task itself). Elsewhere, without it, Run makes the
	// calling process a child subreaper and, after the direct child exits,
	// kills the orphans it inherited that started after the task did.
	Supervised bool
	// Pool, if non-nil, lends the task a long-lived supervisor instead of
	// starting one for it, where that supervisor's own process state
	// cannot depend on the task (see Pool); every other task, and every
	// task without a Pool, gets a supervisor of its own as before. A
	// process that runs many tasks (the queue worker, the agent) keeps
	// one Pool for its life and closes it at the end.
	Pool *Pool
	// Stdin, if non-nil, is copied to the child's standard input after the
	// task's context files (alone, when the task has none). Nil with no
	// context means /dev/null.
	Stdin io.Reader
	// Environ is where allowed variables take their values from; nil means
	// os.Environ().
	Environ []string
	// Resolve, if set, is how the proxy of a task under network allow
	// resolves a name its allowlist admitted into addresses in text form,
	// as net.Resolver.LookupHost does (nil: the system resolver). Tests
	// point listed names at their own servers with it.
	Resolve func(ctx context.Context, host string) ([]string, error)
	// OnNetwork, if set, is told every decision of that proxy as it is
	// made (the CLI's --events), from the proxy's goroutines.
	OnNetwork func(account.Decision)
	// Writable are directories the task may write beside the policy's
	// workspace and its private TMPDIR, under landlock and strict (under
	// none everything the user may write is writable anyway). It is the
	// caller's grant, not the task's: the queue worker runs git with the
	// repository's workspace and the per-attempt tree it made for a
	// worktree, which it keeps outside every tree a task can write. Each
	// is resolved and opened once, as the workspace is; the Landlock rules
	// and strict's binds are made from those descriptors.
	Writable []string
}

// DefaultStderrBytes is what Options.Stderr receives at most when
// Options.StderrBytes is not set: as much as the default output_bytes.
const DefaultStderrBytes = 1 << 20

// errTimedOut is the cancellation cause of the task's own timeout, so it
// can be told apart from the caller's deadline or cancellation, which
// both also surface as a done context.
var errTimedOut = errors.New("task timed out")

// drainWait bounds the last read of the output pipes after every process
// of the task has been killed and reaped. By then the pipes' writers are
// gone and EOF is immediate; the bound only matters if a process outside
// the task's tree was handed a pipe.
const drainWait = 100 * time.Millisecond

// Run checks the task against the policy and runs it.
//
// err != nil only when no process was started: refused (126, also for a
// path outside the workspace or a limit above the policy's), program not
// found (127), invalid input (2), isolation unavailable or another failure
// of the runner itself (125); errors.Is works with the ErrXxx values and
// exitcode.Of gives the code. Once a process started, Run returns its
// Result, whose Status says what happened, and a nil error.
//
// The supervisor is forked from the thread Run's goroutine is on, and its
// parent-death signal fires when that thread ends: a process that runs
// tasks must never end a goroutine locked to its OS thread (LockOSThread
// without UnlockOSThread), which is the only way the Go runtime ends one.
func Run(ctx context.Context, p *Policy, t *Task, opt Options) (*Result, error) {
	markNonDumpable()
	pl, err := prepare(p, t, &opt)
	if err != nil {
		return nil, err
	}
	defer pl.close()
	pl.pool = opt.Pool
	return pl.run(ctx, &opt)
}

// exitInfo is how the task's main process ended.
type exitInfo struct {
	status syscall.WaitStatus
	rusage syscall.Rusage
}

// proc is a started task, whatever the mode (direct child, exec shim,
// supervisor). Its methods are called from Run's goroutine only.
type proc interface {
	// exited delivers the main process's end exactly once.
	exited() <-chan exitInfo
	// signal sends sig to every process of the task that can be found.
	signal(sig unix.Signal)
	// finish kills whatever of the task is left, reaps it and returns
	// once nothing of the task remains (or it gave up, bounded).
	finish()
}

func (pl *plan) run(ctx context.Context, opt *Options) (*Result, error) {
	res := &Result{
		TypeMeta:     jsonx.Meta(KindResult),
		TaskID:       pl.task.ID,
		Program:      pl.task.Program,
		ResolvedPath: pl.path,
		Argc:         len(pl.argv),
	}
	stdin, feeder, err := pl.openStdin(opt)
	if err != nil {
		return nil, err
	}
	outR, outW, err := childPipe(0, true)
	if err != nil {
		stdin.Close()
		feeder.stop()
		return nil, exitcode.Errorf(exitcode.Internal, "output pipe: %w", err)
	}
	growPipe(outR)
	capt := newCapture(pl.limits.OutputBytes, opt.Stream)
	// A separate stderr pipe (Options.Stderr), or none: the child's fd 2
	// is then the output pipe too.
	var errR, errW *os.File
	var errSink *capped
	if opt.Stderr != nil {
		if errR, errW, err = os.Pipe(); err != nil {
			outR.Close()
			outW.Close()
			stdin.Close()
			feeder.stop()
			return nil, exitcode.Errorf(exitcode.Internal, "stderr pipe: %w", err)
		}
		limit := opt.StderrBytes
		if limit <= 0 {
			limit = DefaultStderrBytes
		}
		errSink = &capped{w: opt.Stderr, limit: limit}
	}

	// The clock starts before the start call: a runner held up while the
	// supervisor starts the task (load, or a worker stopped by SIGSTOP)
	// still counts the task's whole life, start to reap, on the monotonic
	// clock.
	started := time.Now()
	pr, err := start(pl, stdin, outW, errW)
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	stdin.Close()
	if err != nil {
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		feeder.stop()
		return nil, err
	}
	res.StartedAt = started.UTC()
	// Only now: a best-effort start may have dropped a feature.
	res.Isolation = IsolationReport{Backend: pl.iso.backend, Enforced: pl.iso.enforced, Dropped: pl.iso.dropped}
	if res.Isolation.Enforced == nil {
		res.Isolation.Enforced = []string{}
	}
	res.Network = &NetworkReport{Mode: pl.iso.network}
	feeder.start()
	// Each pipe is drained by its own goroutine; its channel closes at
	// EOF and is set to nil here once seen, so a nil channel means that
	// pipe is done (or was never there).
	outC := drain(outR, capt)
	var errC <-chan struct{}
	if errR != nil {
		errC = drain(errR, errSink)
	}

	runCtx, cancel := context.WithTimeoutCause(ctx, pl.limits.Timeout.D(), errTimedOut)
	defer cancel()
	var (
		ex            exitInfo
		exited        bool
		exitC         = pr.exited()
		done          = runCtx.Done()
		killC, graceC <-chan time.Time
	)
loop:
	for !exited || outC != nil || errC != nil {
		select {
		case <-done:
			done = nil
			if exited { // the program already ended: stop waiting for its pipes
				res.OutputIncomplete = true
				break loop
			}
			if errors.Is(context.Cause(runCtx), errTimedOut) {
				res.TimedOut = true
				res.TimeoutMS = pl.limits.Timeout.D().Milliseconds()
			} else {
				res.Cancelled = true
			}
			pr.signal(unix.SIGTERM)
			killC = time.After(pl.limits.KillAfter.D())
		case <-killC:
			killC = nil
			pr.signal(unix.SIGKILL)
			res.Killed = true
		case ex = <-exitC:
			exited, exitC, killC = true, nil, nil
			if outC != nil || errC != nil {
				graceC = time.After(pl.limits.Grace.D())
			}
		case <-outC:
			outC = nil
		case <-errC:
			errC = nil
		case <-graceC:
			res.OutputIncomplete = true
			break loop
		}
	}
	pr.finish()
	pl.netProxy.report(res.Network)
	uncounted := false
	if c, ok := pr.(interface {
		cleanup() (killed, leftover int, uncounted bool)
	}); ok {
		res.KilledAtEnd, res.Leftover, uncounted = c.cleanup()
	}
	// Everything of the task is dead: read what it left in the pipes,
	// both within one drainWait.
	deadline := time.Now().Add(drainWait)
	if outC != nil {
		_ = outR.SetReadDeadline(deadline)
	}
	if errC != nil {
		_ = errR.SetReadDeadline(deadline)
	}
	if outC != nil {
		<-outC
	}
	if errC != nil {
		<-errC
	}
	outR.Close()
	if errR != nil {
		errR.Close()
	}
	feeder.stop()

	ended := time.Now()
	res.EndedAt = ended.UTC()
	res.DurationMS = ended.Sub(started).Milliseconds()
	res.Output, res.OutputOmitted = capt.output()
	res.OutputTruncated = res.OutputOmitted > 0
	res.OutputBytes = capt.total
	if errSink != nil {
		res.StderrBytes, res.StderrDropped = errSink.total, errSink.total-errSink.passed
	}
	res.Rusage = rusageOf(&ex.rusage)
	switch st := ex.status; {
	case st.Exited():
		res.ExitCode = st.ExitStatus()
	case st.Signaled():
		res.Signal = unix.SignalName(st.Signal())
		res.ExitCode = 128 + int(st.Signal())
	}
	switch {
	case res.TimedOut:
		res.Status = StatusTimedOut
	case res.Cancelled:
		res.Status = StatusCancelled
	case res.ExitCode == 0:
		res.Status = StatusSucceeded
	default:
		res.Status = StatusFailed
	}
	if res.Leftover > 0 { // containment failed: never a success, whatever the program did
		res.Status = StatusError
		res.Error = fmt.Sprintf("%d process(es) of the task outlived its cleanup (leftover)", res.Leftover)
		if uncounted {
			res.Error = errUncounted
		}
	}
	res.ToolExitCode = res.CLICode()
	return res, nil
}

// errUncounted is the Result's error when the supervisor ended without
// confirming that nothing of the task was left and nothing else can
// count what is (no cgroup, no PID namespace): see superProc.finish.
const errUncounted = "the task's supervisor ended before it confirmed that no process of the task was left " +
	"(it was killed, or did not finish within 5s), and without a cgroup or PID namespace they cannot be counted: " +
	"processes of the task may have outlived it (leftover)"

// drain copies r to w from its own goroutine until EOF, an error, or the
// read deadline the runner sets when it stops waiting; the channel closes
// then.
func drain(r *os.File, w io.Writer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := drainBufs.Get().(*[]byte)
		_, _ = io.CopyBuffer(w, onlyReader{r}, *buf)
		drainBufs.Put(buf)
	}()
	return done
}

// onlyReader hides *os.File's WriterTo/ReaderFrom so io.CopyBuffer uses
// our buffer and our capture's Write, not a splice path.
type onlyReader struct{ io.Reader }

// CLICode is the exit code of the shared exit-code table for this result:
// the child's own code passed through, 124 timed out (137 when the
// --kill-after SIGKILL was needed, as GNU timeout), 130 cancelled, 128+N
// for a signal we did not send, for a Result built from a refusal
// (ErrorResult) the refusal's code, and 125 (exitcode.Internal) when
// processes of the task outlived the cleanup (Leftover), whatever the
// program did.
func (r *Result) CLICode() int {
	if r.Leftover > 0 {
		return exitcode.Internal
	}
	switch r.Status {
	case StatusTimedOut:
		if r.Killed {
			return 128 + int(unix.SIGKILL)
		}
		return exitcode.TimedOut
	case StatusCancelled:
		return exitcode.Cancelled
	case StatusRejected, StatusError:
		if r.ExitCode == 0 {
			return exitcode.Internal
		}
	}
	return r.ExitCode
}

// ErrorResult is the Result of a task that never started because Run
// refused it or failed (err from Run): status rejected for a refusal or
// invalid input, error otherwise, with the exit code and message. Callers
// that must record every attempt (the queue worker) use it; the artexec
// CLI prints no Result when nothing started.
func ErrorResult(t *Task, err error) *Result {
	code := exitcode.Of(err)
	status := StatusError
	if code == exitcode.Refused || code == exitcode.Usage {
		status = StatusRejected
	}
	now := time.Now().UTC()
	r := &Result{
		TypeMeta:  jsonx.Meta(KindResult),
		Status:    status,
		ExitCode:  code,
		StartedAt: now,
		EndedAt:   now,
		Error:     err.Error(),
		Isolation: IsolationReport{Backend: IsolationNone, Enforced: []string{}},
	}
	if t != nil {
		r.TaskID, r.Program, r.Argc = t.ID, t.Program, 1+len(t.Args)
	}
	r.ToolExitCode = r.CLICode()
	return r
}

// stdinFeeder copies the context files (and Options.Stdin) into the
// child's stdin pipe from its own goroutine, so a child that never reads
// cannot block the runner.
type stdinFeeder struct {
	w       *os.File
	srcs    []io.Reader
	done    chan struct{}
	owned   bool // every source is ours (files): safe to wait for
	started bool
}

func (f *stdinFeeder) start() {
	if f == nil {
		return
	}
	f.started = true
	go func() {
		defer close(f.done)
		defer f.w.Close()
		buf := make([]byte, 32<<10)
		for _, r := range f.srcs {
			if _, err := io.CopyBuffer(f.w, onlyReader{r}, buf); err != nil {
				return
			}
		}
	}()
}

// stop unblocks and, where it can, waits for the feeder. A caller's Stdin
// blocked in Read cannot be interrupted; its goroutine ends when Read
// returns.
func (f *stdinFeeder) stop() {
	if f == nil {
		return
	}
	if !f.started {
		f.w.Close()
		return
	}
	select {
	case <-f.done:
		return
	default:
	}
	_ = f.w.SetWriteDeadline(time.Now())
	if f.owned {
		<-f.done
	}
}

// openStdin returns the child's stdin: /dev/null, or the read end of a
// pipe a feeder fills with the context files in manifest order, each read
// at most up to context_bytes (a file grown since its size was checked is
// cut there), then Options.Stdin.
func (pl *plan) openStdin(opt *Options) (*os.File, *stdinFeeder, error) {
	if len(pl.contexts) == 0 && opt.Stdin == nil {
		// Opened blocking and wrapped, not os.Open: the child's stdin
		// needs no poller registration (which /dev/null refuses anyway,
		// after two fcntl each way).
		fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, nil, exitcode.Errorf(exitcode.Internal, "stdin: %w", err)
		}
		return os.NewFile(uintptr(fd), os.DevNull), nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, exitcode.Errorf(exitcode.Internal, "stdin pipe: %w", err)
	}
	f := &stdinFeeder{w: w, done: make(chan struct{}), owned: opt.Stdin == nil}
	for _, c := range pl.contexts {
		f.srcs = append(f.srcs, io.LimitReader(c, pl.limits.ContextBytes))
	}
	if opt.Stdin != nil {
		f.srcs = append(f.srcs, opt.Stdin)
	}
	return r, f, nil
}

func rusageOf(ru *syscall.Rusage) Rusage {
	return Rusage{
		UserMS:   ru.Utime.Sec*1000 + int64(ru.Utime.Usec)/1000,
		SysMS:    ru.Stime.Sec*1000 + int64(ru.Stime.Usec)/1000,
		MaxRSSKB: maxRSSKB(ru),
	}
}
