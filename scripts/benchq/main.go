// Command benchq drives the peers of scripts/bench-queue.sh — River on
// PostgreSQL, asynq on Redis and goqite on SQLite — through the same work
// as artq (tasks that each run `true` as a real process), and measures any
// command's wall time and CPU, its own children's and the servers' it is
// told about. It is a module of its own so that the product's go.mod never
// requires the peers.
//
//	benchq measure [-servers PID,PID] [-procs N] [-stdin FILE] -- ARGV...
//	benchq self -- ARGV...
//	benchq port
//	benchq river  -dsn URL     -op reset|enqueue|drain|count [-n N] [-c C]
//	benchq asynq  -addr H:P    -op reset|enqueue|drain|count [-n N] [-c C]
//	benchq goqite -db FILE     -op reset|enqueue|drain|count [-n N] [-c C]
//
// port prints a free TCP port on loopback for a server to listen on.
// measure prints one line: wall_s cpu_s client_cpu_s server_cpu_s; self
// prints wall_s self_cpu_s children_cpu_s (the command's own CPU apart
// from its children's: an artq worker's, apart from its tasks'). The
// peers' count prints the query's own time in seconds (the process around
// it is what measure times).
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "measure":
		err = measure(os.Args[2:])
	case "self":
		err = self(os.Args[2:])
	case "port":
		err = freePort()
	case "river":
		err = peer(os.Args[2:], riverPeer{})
	case "asynq":
		err = peer(os.Args[2:], asynqPeer{})
	case "goqite":
		err = peer(os.Args[2:], goqitePeer{})
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchq %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: benchq measure|self|port|river|asynq|goqite ... (see the package comment)")
	os.Exit(2)
}

// runTrue is every peer's job: `true` as a real process, as artq runs it.
func runTrue() error { return exec.Command("true").Run() }

// A peerOps is one peer's four operations on its queue.
type peerOps interface {
	reset(c *peerConfig) error
	enqueue(c *peerConfig) error
	drain(c *peerConfig) error
	count(c *peerConfig) (int, error)
}

type peerConfig struct {
	target string // DSN, address or file
	n, c   int
}

func peer(args []string, p peerOps) error {
	fs := flag.NewFlagSet("peer", flag.ExitOnError)
	var c peerConfig
	fs.StringVar(&c.target, "dsn", "", "PostgreSQL URL (river)")
	fs.StringVar(&c.target, "addr", "", "Redis address (asynq)")
	fs.StringVar(&c.target, "db", "", "SQLite file (goqite)")
	op := fs.String("op", "", "reset|enqueue|drain|count")
	fs.IntVar(&c.n, "n", 2000, "tasks")
	fs.IntVar(&c.c, "c", 1, "concurrency")
	_ = fs.Parse(args)
	switch *op {
	case "reset":
		return p.reset(&c)
	case "enqueue":
		return p.enqueue(&c)
	case "drain":
		return p.drain(&c)
	case "count":
		t0 := nowSeconds()
		n, err := p.count(&c)
		if err != nil {
			return err
		}
		fmt.Printf("%.6f %d\n", nowSeconds()-t0, n)
		return nil
	}
	return fmt.Errorf("-op %q: want reset, enqueue, drain or count", *op)
}

func freePort() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}
