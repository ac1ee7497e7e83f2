package termsig

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

func want(t *testing.T, c <-chan os.Signal, sig syscall.Signal) {
	t.Helper()
	select {
	case got := <-c:
		if got != sig {
			t.Fatalf("got %v; want %v", got, sig)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no %v within 10 s", sig)
	}
}

// TestCatch sends the process SIGTERM and SIGINT while they are caught:
// both arrive on the channel and the process lives.
func TestCatch(t *testing.T) {
	c, stop := Catch(syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGTERM} {
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		want(t, c, sig)
	}
}

// TestStopRestores: after stop, os/signal gets the signal again (the Go
// runtime's handler is back), and Catch can be used once more.
func TestStopRestores(t *testing.T) {
	c, stop := Catch(syscall.SIGTERM)
	stop()
	stop() // twice is fine
	n := make(chan os.Signal, 1)
	signal.Notify(n, syscall.SIGTERM)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	want(t, n, syscall.SIGTERM)
	signal.Stop(n)
	select {
	case s := <-c:
		t.Fatalf("the stopped Catch got %v", s)
	default:
	}
	c, stop = Catch(syscall.SIGTERM)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	want(t, c, syscall.SIGTERM)
}
