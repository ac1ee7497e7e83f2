//go:build linux && !amd64

package filters

// legacySetIDCalls: architectures other than amd64 have no chmod or creat
// system call, only the *at forms the common table covers.
func legacySetIDCalls(file, creatPath string) []callCase { return nil }
