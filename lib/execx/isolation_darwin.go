//go:build darwin

package execx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/art-runtime/art/lib/execx/shim"
	"github.com/art-runtime/art/lib/execx/stage"
)

const sandboxExec = "/usr/bin/sandbox-exec"

func planIsolation(p *Policy, l *Limits, opt *Options, _ []string) (ip isoPlan, err error) {
	ip = isoPlan{backend: p.Isolation, bestEffort: p.IsolationBestEffort, supervise: opt.Supervised}
	var rl []string
	ip.rlimits, rl = rlimitsOf(l)
	ip.enforced = []string{}
	switch p.Isolation {
	case IsolationLandlock, IsolationStrict:
		if !ip.bestEffort {
			return ip, unavailable(string(p.Isolation), errors.New("Landlock and Linux namespaces exist only on Linux"))
		}
	case IsolationSeatbelt:
		if _, err := os.Stat(sandboxExec); err != nil {
			if !ip.bestEffort {
				return ip, unavailable("seatbelt", err)
			}
			break
		}
		if ip.tmpdir, ip.tmp, err = makeTmpdir(); err != nil {
			return ip, err
		}
		ip.seatbelt = true
		ip.enforced = append(ip.enforced, "seatbelt.network", "seatbelt.fs_write")
	}
	ip.enforced = append(ip.enforced, rl...)
	// The network: seatbelt denies all of it; a namespace of the task's
	// own (loopback, allow) exists only on Linux.
	ip.network = NetworkHost
	if ip.seatbelt {
		ip.network = NetworkNone
	}
	if mode := p.NetworkMode(); mode != ip.network && networkRank(mode) > networkRank(NetworkHost) && !ip.seatbelt {
		why := errors.New("network namespaces exist only on Linux")
		if !ip.bestEffort {
			return ip, unavailable("network "+string(mode), why)
		}
		ip.dropped = append(ip.dropped, "network."+string(mode)+": "+why.Error())
	}
	return ip, nil
}

// wrapCommand runs the program under sandbox-exec with a profile that
// denies all network operations and every file write outside the
// workspace, the private temp dir and Options.Writable.
func wrapCommand(pl *plan) (string, []string) {
	if !pl.iso.seatbelt {
		return pl.path, pl.argv
	}
	argv := []string{"sandbox-exec", "-p", seatbeltProfile(pl), pl.path}
	return sandboxExec, append(argv, pl.argv[1:]...)
}

// seatbeltProfile is written in the Scheme dialect of sandbox-exec. Paths
// must be canonical (/tmp is /private/tmp).
func seatbeltProfile(pl *plan) string {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n(deny network*)\n(deny file-write*)\n(allow file-write*\n")
	for _, p := range append([]string{pl.workspace, pl.iso.tmpdir}, pl.writable...) {
		if p == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		b.WriteString("  (subpath " + schemeString(p) + ")\n")
	}
	b.WriteString("  (literal \"/dev/null\") (literal \"/dev/zero\") (regex #\"^/dev/tty\") (regex #\"^/dev/fd/\"))\n")
	return b.String()
}

func schemeString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func (pl *plan) shimSpec(bool) *shim.Spec {
	path, argv := wrapCommand(pl)
	return &shim.Spec{Stage: stage.Spec{Path: path, Argv: argv, Env: pl.env, Rlimits: pl.iso.rlimits}}
}

func landlockABI() int { return 0 }
