// Package filters compiles the seccomp filters of the exec stage's
// profiles (stage.SeccompLandlock, stage.SeccompStrict) into classic BPF
// programs. The runner compiles them, once per profile, and sends the
// programs in the stage's Spec: the stage only loads them, so neither it
// nor the minimal shim binary links go-seccomp-bpf, whose syscall tables
// would otherwise be built at every task's start.
package filters
