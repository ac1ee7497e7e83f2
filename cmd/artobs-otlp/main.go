// Command artobs-otlp is the OpenTelemetry exporter artq and artagent start
// for --events otlphttp://HOST:PORT (lib/obs/otlp): it reads the redacted
// envelopes and finished spans they write to its stdin and sends them to
// the collector over OTLP/HTTP with the official OpenTelemetry SDK. The
// SDK, the exporters and what they link (gRPC, protobuf) live in this
// binary only, so the tools stay lean (internal/layout/binaries_test.go).
package main

import (
	"os"

	"github.com/art-runtime/art/internal/otlpcli"
)

func main() { os.Exit(otlpcli.Main()) }
