//go:build race

package e2e_test

// raceEnabled: the pipeline's binaries are built with -race too.
const raceEnabled = true
