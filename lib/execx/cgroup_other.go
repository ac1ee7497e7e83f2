//go:build !linux

package execx

// cgroupUsable: task cgroups are Linux's (see cgroup_linux.go).
func cgroupUsable() bool { return false }
