// Package otlpcli is the command line of artobs-otlp, the exporter process
// artq and artagent start for an otlphttp:// events sink
// (lib/obs/otlp). It lives here, not in cmd/artobs-otlp, so the tools'
// tests can run it as a command of their own test binaries.
package otlpcli

import (
	"context"
	"runtime"
	"time"

	"github.com/alecthomas/kong"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/obs/otlp/otlpexport"
	"github.com/art-runtime/art/lib/obs/otlp/otlpwire"
)

// CLI is artobs-otlp's grammar.
type CLI struct {
	Service        string           `name:"service" env:"ARTOBS_OTLP_SERVICE" required:"" placeholder:"NAME" help:"service.name of everything exported (the tool that starts this exporter)."`
	ServiceVersion string           `name:"service-version" env:"ARTOBS_OTLP_SERVICE_VERSION" placeholder:"VERSION" help:"service.version of everything exported."`
	Buffer         int              `name:"buffer" env:"ARTOBS_OTLP_BUFFER" default:"8192" help:"Records each signal's queue holds; more are dropped and counted."`
	Timeout        time.Duration    `name:"timeout" env:"ARTOBS_OTLP_TIMEOUT" default:"2s" help:"Bound of one export request, and of the final send at the end of the stream."`
	Target         string           `arg:"" name:"target" placeholder:"otlphttp://HOST:PORT" help:"The collector's OTLP/HTTP address."`
	Version        kong.VersionFlag `name:"version" help:"Print the version and exit."`
}

// Help shows what runs this program.
func (c *CLI) Help() string {
	return `artobs-otlp is not run by hand: artq and artagent start it for
--events otlphttp://HOST:PORT (or ART_EVENTS) and write to its stdin the
redacted event envelopes and finished spans (lib/obs/otlp/otlpwire); it
sends them to the collector over OTLP/HTTP and reports on stdout what was
exported. It reads until its stdin ends, sends what it holds within
--timeout, and exits; SIGINT and SIGTERM do not stop it early.

Install it beside artq and artagent (make install); they look there, then
on PATH.

Example (what artq runs):
  artq work --drain --events otlphttp://127.0.0.1:4318`
}

// Run exports stdin until it ends. Its context is not watched: an
// interrupt of the tool's process group must not lose what is buffered;
// the tool ends the stream (or kills this process) when it is done.
func (c *CLI) Run(_ context.Context, std cli.IO) error {
	hp, err := otlpwire.ParseTarget(c.Target)
	if err != nil {
		return err
	}
	if c.Buffer < 1 {
		return exitcode.Errorf(exitcode.Usage, "--buffer %d: want at least 1", c.Buffer)
	}
	if c.Timeout <= 0 {
		return exitcode.Errorf(exitcode.Usage, "--timeout %s: want a positive duration", c.Timeout)
	}
	e, err := otlpexport.Open(hp, c.Target, otlpexport.Options{Service: c.Service, Version: c.ServiceVersion, Buffer: c.Buffer, Timeout: c.Timeout})
	if err != nil {
		return exitcode.Wrap(exitcode.Usage, err)
	}
	if err := otlpexport.Serve(std.In, std.Out, e); err != nil {
		return exitcode.Errorf(exitcode.Internal, "stdin: %v", err)
	}
	return nil
}

// Main runs artobs-otlp with the process's arguments and streams. It runs
// on one processor: it reads a pipe and sends a batch at a time, so more
// buy no speed, and it shares the machine with the work it reports on (a
// 2,000-task drain cost it 0.31 s of CPU on one against 0.46 s on two,
// mostly scheduling and parallel GC).
func Main() int {
	runtime.GOMAXPROCS(1)
	return cli.Main("artobs-otlp", "The OpenTelemetry exporter behind --events otlphttp:// (run by artq and artagent).", &CLI{})
}
