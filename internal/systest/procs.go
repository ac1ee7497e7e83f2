package systest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// PidsWithArg returns the pids of processes, other than this one, that have
// arg as one whole argument, read from /proc (Linux; elsewhere it finds
// none). Tests give the processes they start a unique marker argument and
// use this to prove that none of them survived a cancel or a kill.
func PidsWithArg(arg string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		for _, a := range bytes.Split(cmd, []byte{0}) {
			if string(a) == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out, nil
}
