#!/usr/bin/env bash
# Where a one-shot start's CPU goes: perf record over RUNS starts of one
# command, every sample (all its processes, user and kernel) put in one
# phase by the outermost frame that names one, per process. Beside the
# numbers of scripts/bench-artexec.sh, this says which part of a start is
# a floor (execve, exit, the Go runtime's own start, two Go processes)
# and which is artexec's own work.
#
# Usage: scripts/profile-start.sh [none|landlock|strict|floor|floorns|bwrap [RUNS]]
#   none, landlock, strict: `artexec run --workspace WS --isolation MODE -- true`
#   floor: the two-process Go floor (scripts/gofloors.sh: a runner that
#     starts a supervisor that starts true)
#   floorns: the same with the supervisor in strict's namespaces
#   bwrap: `bwrap --unshare-all --new-session --die-with-parent` as in
#     scripts/bench-artexec.sh
# Uses artexec from PATH (its artexec-shim beside it), else builds both
# unstripped (symbols for the phases); perf needs
# kernel.perf_event_paranoid <= 1 or root. Work the kernel defers to its
# own threads (a network namespace's teardown) is in no process here.
set -euo pipefail
cd "$(dirname "$0")/.."

what="${1:-none}"
runs="${2:-100}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ws"
true_bin=/bin/true

case "$what" in
none | landlock | strict)
	if command -v artexec >/dev/null 2>&1; then
		artexec="$(command -v artexec)"
	else
		CGO_ENABLED=0 go build -trimpath -o "$tmp/" ./cmd/artexec ./cmd/artexec-cli ./cmd/artexec-shim
		artexec="$tmp/artexec"
	fi
	cmd=("$artexec" run --workspace "$tmp/ws" --isolation "$what" -- true)
	;;
floor)
	# shellcheck source=scripts/gofloors.sh
	. scripts/gofloors.sh
	build_gofloor gofloor2 "$tmp"
	cmd=("$tmp/gofloor2/gofloor2" "$true_bin")
	;;
floorns)
	# shellcheck source=scripts/gofloors.sh
	. scripts/gofloors.sh
	build_gofloor gofloor2 "$tmp"
	cmd=("$tmp/gofloor2/gofloor2" -ns "$true_bin")
	;;
bwrap)
	cmd=(bwrap --unshare-all --new-session --die-with-parent --ro-bind / / --proc /proc --dev /dev "$true_bin")
	;;
*)
	echo "usage: $0 [none|landlock|strict|floor|floorns|bwrap [RUNS]]" >&2
	exit 2
	;;
esac

for ((i = 0; i < 5; i++)); do "${cmd[@]}" >/dev/null; done # warm the page cache
perf record -q -F 5000 -g -o "$tmp/perf.data" -- bash -c 'for ((i = 0; i < $1; i++)); do "${@:2}" >/dev/null; done' _ "$runs" "${cmd[@]}" 2>/dev/null
echo "# $what: ${cmd[*]}"
echo "# $runs runs, perf record -F 5000 -g (cpu-clock); CPU by process and phase: share, µs a run"
perf script -i "$tmp/perf.data" -F comm,period,ip,sym 2>/dev/null | awk -v runs="$runs" '
# A sample: a line with the process name, its frames (innermost first),
# a blank line. The phase is the outermost frame that names a specific
# one (so a page fault under the spec decoding counts as the spec), else
# main, else the Go runtime.
function specific(f) {
	if (f ~ /^runtime\.doInit/) return "package init"
	if (f ~ /execx\.prepare$/) return "execx: prepare (program, dirs, plan, cgroup probe)"
	if (f ~ /execx\.newTaskCgroup|taskCgroup\)\.(remove|kill|wait)/) return "execx: task cgroup (mkdir, kill, wait, rmdir)"
	if (f ~ /execx\.startSupervised/) return "execx: supervisor start (pipes, fork+exec, spec)"
	if (f ~ /WriteJSON|printResult/) return "execx: Result"
	if (f ~ /shim\.readSpec/) return "shim: spec"
	if (f ~ /View\)\.Setup|shim\.mapIDs|shim\.setupNet|LoopbackUp/) return "shim: namespaces (ids, mount view, lo)"
	if (f ~ /shim\.startTask|shim\.startRestricted/) return "shim: task start (restrict, fork+exec)"
	if (f ~ /(^|_)(sys_)?execve|bprm_execve|load_elf_binary/) return "kernel: execve"
	if (f ~ /do_exit|exit_mmap|sys_exit_group/) return "kernel: exit"
	if (f ~ /kernel_clone|sys_clone|sys_vfork/) return "kernel: fork"
	if (f ~ /unshare_nsproxy|create_new_namespaces|copy_namespaces|sys_unshare|sys_setns/) return "kernel: namespaces"
	if (f ~ /sys_mount|path_mount|sys_move_mount|sys_open_tree|sys_mount_setattr|sys_pivot_root|sys_umount/) return "kernel: mounts"
	return ""
}
function phase(   i, p, f) {
	for (i = n; i >= 1; i--) if ((p = specific(fr[i])) != "") return p
	for (i = n; i >= 1; i--) if (fr[i] ~ /^main\.main$/) return "main: other"
	for (i = n; i >= 1; i--) {
		if (fr[i] ~ /^runtime\.(gcBgMarkWorker|bgsweep|bgscavenge|sysmon)/) return "Go runtime: gc, sysmon"
		if (fr[i] ~ /^runtime\./) return "Go runtime: start, scheduler, memory"
	}
	# code without frame pointers (bwrap, true): the system call, or a fault
	for (i = n; i >= 1; i--) {
		f = fr[i]
		if (sub(/^(__x64_sys_|__do_sys_|__se_sys_|ksys_)/, "", f)) return "kernel: " f
		if (f ~ /^asm_exc_page_fault$/) return "page faults"
	}
	return "other (user code)"
}
function flush() {
	if (comm != "") { k = comm "\t" phase(); cnt[k] += period; per[comm] += period; total += period }
	comm = ""; n = 0
}
/^[^ \t]/ { flush(); comm = $1; period = $2; next }
/^[ \t]*$/ { flush(); next }
{ sub(/^[ \t]+/, ""); sub(/^[0-9a-f]+ /, ""); sub(/\+0x[0-9a-f]+$/, ""); fr[++n] = $0 }
END {
	flush()
	# the cpu-clock period is in ns: CPU a run in µs
	for (k in cnt) { split(k, a, "\t"); printf "%6.1f%% %7d µs  %-14s %s\n", 100 * cnt[k] / total, cnt[k] / 1000 / runs, a[1], a[2] }
	for (c in per) printf "%6.1f%% %7d µs  %-14s (all)\n", 100 * per[c] / total, per[c] / 1000 / runs, c
	printf "100.0%% %7d µs  %-14s (all)\n", total / 1000 / runs, "every process"
}' | sort -k4,4 -k1,1nr
