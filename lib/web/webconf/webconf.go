// Package webconf is what the web view (lib/web) serves and how it is
// guarded, as a plain struct: the command line (internal/webcli) fills it
// in without linking the HTTP stack, so artobs, which checks the flags of
// `artobs serve`, stays free of net/http (internal/layout).
package webconf

// Config is what the server reads and how it is guarded.
type Config struct {
	// Listen is the address served, HOST:PORT; Loopback says HOST is a
	// loopback address (then localhost is an accepted Host too).
	Listen   string
	Loopback bool
	// Token, when set, is required on every request.
	Token string
	// AllowHost are further host names the Host header may carry.
	AllowHost []string
	// Queues are the queues shown (empty: every file queue under Home),
	// on Backend ("file" or a NATS URL).
	Queues  []string
	Backend string
	// Sinks are the artobs JSONL sinks of the events pages.
	Sinks []string
	// Dirs are the directories agent transcripts may be read from.
	Dirs []string
	// Home is the art state home: queues under Home/queues, goals under
	// Home/goals.
	Home string
}
