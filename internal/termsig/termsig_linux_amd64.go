package termsig

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pipeW is the write end of the pipe the handler writes to; read by the
// handler (assembly), so an int64 the assembly loads whole.
var pipeW int64 = -1

// handlerAddr and restorerAddr are the entry points of the assembly
// handler and of its return trampoline (rt_sigreturn).
func handlerAddr() uintptr
func restorerAddr() uintptr

// sigaction is the kernel's struct sigaction on amd64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

const (
	saOnstack  = 0x08000000 // on the thread's signal stack: a goroutine's may be too small for the frame
	saRestorer = 0x04000000
	saRestart  = 0x10000000
)

var (
	setup   sync.Once
	setupOK bool
	// target is the channel of the Catch in force, nil between them.
	target atomic.Pointer[chan os.Signal]
)

// start makes the pipe and its reader once, for the process's life: the
// write end is never closed, so a handler running on another thread
// while Stop runs can never write into a descriptor number reused since.
func start() bool {
	setup.Do(func() {
		// Both ends non-blocking: the handler must never block, and the
		// read end, wrapped, is read through the runtime's poller.
		var p [2]int
		if unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) != nil {
			return
		}
		atomic.StoreInt64(&pipeW, int64(p[1]))
		go read(os.NewFile(uintptr(p[0]), "termsig"))
		setupOK = true
	})
	return setupOK
}

// read hands each signal number the handler wrote to the Catch in force.
func read(r *os.File) {
	var buf [16]byte
	for {
		n, err := r.Read(buf[:])
		if err != nil { // nobody closes r: not seen
			return
		}
		c := target.Load()
		for _, b := range buf[:n] {
			if c != nil {
				select {
				case *c <- syscall.Signal(b):
				default:
				}
			}
		}
	}
}

func catch(ch chan os.Signal, sigs []syscall.Signal) func() {
	if !start() {
		return notify(ch, sigs)
	}
	target.Store(&ch)
	act := sigaction{
		handler:  handlerAddr(),
		flags:    saOnstack | saRestorer | saRestart,
		restorer: restorerAddr(),
		mask:     ^uint64(0),
	}
	old := make([]sigaction, len(sigs))
	for i, s := range sigs {
		if err := rtSigaction(s, &act, &old[i]); err != nil {
			for j := range i {
				_ = rtSigaction(sigs[j], &old[j], nil)
			}
			target.Store(nil)
			return notify(ch, sigs)
		}
	}
	return func() {
		for i, s := range sigs {
			_ = rtSigaction(s, &old[i], nil)
		}
		target.Store(nil)
	}
}

func rtSigaction(sig syscall.Signal, act, old *sigaction) error {
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), 8, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
