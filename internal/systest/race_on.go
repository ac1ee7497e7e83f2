//go:build race

package systest

// Race reports whether this binary was built with -race.
const Race = true
