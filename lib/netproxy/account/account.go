// Package account holds what one task's egress proxy decided and moved
// (package netproxy makes them), as plain data: a runner that reports
// them — lib/execx's Result, the queue's reasons, the events — does not
// link the proxy, and a program that never runs a task under network
// allow (the artexec binary) initialises no networking code.
package account

// Decision is what the proxy did with one request of the task.
type Decision struct {
	Host    string
	Port    int
	Allowed bool
	Reason  string // why it was refused, one line
}

// Allowed is one destination the task reached, with the bytes it sent
// there (out) and received from it (in), over every connection to it.
type Allowed struct {
	Host        string `json:"host"`
	Port        int    `json:"port"`
	Connections int    `json:"connections"`
	BytesOut    int64  `json:"bytes_out"`
	BytesIn     int64  `json:"bytes_in"`
}

// Refused is one destination refused, for one reason, Count times.
type Refused struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Report is the accounting of one task's proxy. It keeps at most
// MaxEntries destinations of each kind; the rest are only counted.
type Report struct {
	Allowed        []Allowed `json:"allowed"`
	Refused        []Refused `json:"refused"`
	AllowedOmitted int       `json:"allowed_omitted,omitempty"`
	RefusedOmitted int       `json:"refused_omitted,omitempty"`
}

// MaxEntries bounds each list of a Report.
const MaxEntries = 64
