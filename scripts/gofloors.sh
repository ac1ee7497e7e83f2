# shellcheck shell=bash
# The Go floors scripts/bench-artexec.sh and scripts/profile-start.sh
# measure artexec against, in one place. Sourced; build_gofloor NAME DIR
# writes the program NAME into DIR/NAME and builds DIR/NAME/NAME (false if
# go is missing or the build fails):
#   goempty   a Go process that starts and exits: one runtime start
#   gofloor   the smallest Go program that runs ARG and waits (os/exec)
#   gofloor2  the floor of artexec's shape: two minimal Go processes, a
#             runner that starts a supervisor (itself again) that starts
#             ARG, each waiting for its child; nothing checked or
#             isolated: two Go runtimes starting and two fork+execs
#             (gofloor2 -ns ARG: the supervisor started in strict's
#             namespaces — user, PID, network, IPC, UTS, mount: the clone
#             flags of `artexec run --isolation strict` — the same two
#             processes plus what the kernel charges for making and
#             tearing down those namespaces; no ID maps, nothing mounted)
#   gofloor2null  gofloor2's binary with its main returning at once: what
#             starting the floor's own binary costs (its runtime and
#             packages), the baseline for artexec's binaries started the
#             same way (bench-artexec.sh's rows "nothing run")
#
# returning_main < main.go > main.go: the same source with main returning
# before its first statement, every package still linked and initialised.
returning_main() {
	sed 's/^func main() {\(.*\)$/func main() {\n\tif len(os.Args) < 1<<30 {\n\t\treturn\n\t}\n\t\1/'
}
build_gofloor() { # NAME DIR
	local name="$1" dir="$2/$1"
	command -v go >/dev/null 2>&1 || return 1
	mkdir -p "$dir"
	case "$name" in
	goempty)
		printf 'package main\n\nfunc main() {}\n' >"$dir/main.go"
		;;
	gofloor)
		cat >"$dir/main.go" <<'GO'
package main

import (
	"os"
	"os/exec"
)

func main() {
	if err := exec.Command(os.Args[1]).Run(); err != nil {
		os.Exit(1)
	}
}
GO
		;;
	gofloor2)
		cat >"$dir/main.go" <<'GO'
package main

import (
	"os"
	"os/exec"
	"syscall"
)

func main() {
	prog := os.Args[1]
	if os.Getenv("GOFLOOR2_SUPERVISOR") == "" {
		ns := prog == "-ns"
		if ns {
			prog = os.Args[2]
		}
		cmd := exec.Command("/proc/self/exe", prog)
		cmd.Env = []string{"GOFLOOR2_SUPERVISOR=1"}
		if ns {
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID |
				syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWNS}
		}
		if err := cmd.Run(); err != nil {
			os.Exit(1)
		}
		return
	}
	if err := exec.Command(prog).Run(); err != nil {
		os.Exit(1)
	}
}
GO
		;;
	gofloor2null)
		[ -f "$2/gofloor2/main.go" ] || build_gofloor gofloor2 "$2" || return 1
		returning_main <"$2/gofloor2/main.go" >"$dir/main.go"
		;;
	*) return 1 ;;
	esac
	printf 'module %s\ngo 1.22\n' "$name" >"$dir/go.mod"
	(cd "$dir" && CGO_ENABLED=0 GOFLAGS= go build -o "$name" . 2>/dev/null)
}
