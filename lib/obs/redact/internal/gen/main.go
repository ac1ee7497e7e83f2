// Command gen writes package redact's gitleaks rule table
// (gitleaks_gen.go) from the gitleaks module go.mod pins; run it with
// `go generate` in lib/obs/redact after bumping that module.
package main

import (
	"fmt"
	"os"

	"github.com/art-runtime/art/lib/obs/redact/internal/gltable"
)

func main() {
	v := gltable.Version()
	if v == "" {
		fmt.Fprintln(os.Stderr, "gen: no gitleaks version in the build info")
		os.Exit(1)
	}
	src, err := gltable.Source("redact", v)
	if err == nil {
		err = os.WriteFile("gitleaks_gen.go", src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
