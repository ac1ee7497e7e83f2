package main

import (
	"context"
	"fmt"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/exitcode"
	"github.com/art-runtime/art/lib/jsonx"
	"github.com/art-runtime/art/lib/obs"
	"github.com/art-runtime/art/lib/obs/redact"
)

// VerifyCmd checks a JSONL sink.
type VerifyCmd struct {
	Path string `arg:"" name:"path" help:"The JSONL sink to check."`
}

// Help shows an example.
func (c *VerifyCmd) Help() string {
	return `Reads the whole file and reports every problem: a record that is not a
valid Event (corrupt), of another apiVersion (version), whose id is not the
hash of its content (id-mismatch: tampered with), not in canonical form
(not-canonical), holding a value redaction would remove (unredacted), an id
seen before (duplicate), a seq not above its subject's previous one (order)
or skipping numbers (gap: an event lost), a line too long (too-long), a
last record without newline (torn). Exit 0 when clean, 1 with findings
(each printed), 4 when the file does not exist.

JSON output (the default off a terminal) is one object: path, records,
subjects, ok, finding_count and findings (the first 1000).

Example:
  artobs verify events.jsonl -o text
  artobs verify events.jsonl | jq '.findings[] | select(.problem == "id-mismatch")'`
}

type verifyOut struct {
	Path         string        `json:"path"`
	Records      int           `json:"records"`
	Subjects     int           `json:"subjects"`
	OK           bool          `json:"ok"`
	FindingCount int           `json:"finding_count"`
	Findings     []obs.Finding `json:"findings"`
}

const maxListedFindings = 1000

// Run verifies.
func (c *VerifyCmd) Run(ctx context.Context, std cli.IO, g *cli.Globals) error {
	asJSON := g.JSON(std)
	out := verifyOut{Findings: []obs.Finding{}}
	rep, err := obs.VerifyFile(c.Path, redact.New(redact.Options{}), func(f obs.Finding) {
		if !asJSON {
			fmt.Fprintf(std.Out, "%s:%d: %s: %s\n", c.Path, f.Line, f.Problem, f.Message)
			return
		}
		if len(out.Findings) < maxListedFindings {
			out.Findings = append(out.Findings, f)
		}
	})
	if err != nil {
		return err
	}
	if asJSON {
		out.Path, out.Records, out.Subjects, out.OK, out.FindingCount = rep.Path, rep.Records, rep.Subjects, rep.OK, rep.Findings
		b, err := jsonx.Marshal(out)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.Out, "%s\n", b)
	} else {
		status := "ok"
		if !rep.OK {
			status = fmt.Sprintf("%d finding(s)", rep.Findings)
		}
		fmt.Fprintf(std.Out, "%s: %d records, %d subjects: %s\n", c.Path, rep.Records, rep.Subjects, status)
	}
	if !rep.OK {
		return exitcode.Quiet(exitcode.Failed)
	}
	return nil
}
