package otlpwire

import (
	"fmt"
	"strings"
)

// The status lines an exporter process writes back to its tool on its
// stdout, one a line:
//
//	warn TEXT             a warning (the first failed export)
//	exported LOGS SPANS   records the collector accepted so far
//	done LOGS SPANS       the same, final: the stream ended and what was
//	                      buffered was sent (or dropped)
//
// The tool counts as dropped every record it handed over that is not in
// the last "exported" or "done" count.
const (
	StatusWarn     = "warn"
	StatusExported = "exported"
	StatusDone     = "done"
)

// ParseStatus reads one status line: its kind and, for exported and done,
// the two counts; a warning's text is in warn.
func ParseStatus(line string) (kind string, logs, spans int64, warn string, err error) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case StatusWarn:
		return kind, 0, 0, rest, nil
	case StatusExported, StatusDone:
		var extra string
		if n, _ := fmt.Sscanf(rest+" .", "%d %d %s", &logs, &spans, &extra); n != 3 || extra != "." || logs < 0 || spans < 0 {
			return "", 0, 0, "", fmt.Errorf("otlp exporter status %q: want %s LOGS SPANS", line, kind)
		}
		return kind, logs, spans, "", nil
	}
	return "", 0, 0, "", fmt.Errorf("otlp exporter status %q: unknown kind", line)
}
