// Package filters holds the seccomp programs of the exec stage's profiles
// (stage.SeccompLandlock, stage.SeccompStrict) as classic BPF, ready to
// send in stage.Spec.Filters: the runner sends them, the stage only loads
// them. On amd64 they are compiled ahead of time (tables_amd64.go, written
// by `go generate`, checked against a fresh compilation by the tests), so
// no tool links go-seccomp-bpf, whose syscall tables would otherwise be
// built at every start of artexec, artq and artagent; elsewhere they are
// compiled at run time, once per profile.
package filters

//go:generate go run ./internal/gen
