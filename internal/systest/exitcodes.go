package systest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// statedExit finds an exit code a script states in a comment or its name:
// "exit 2", "exits 4", "exited 130", "exit code 3", "exit status 1".
var statedExit = regexp.MustCompile(`(?i)\bexit(?:s|ed)?(?: with)?(?: code| status)?[ _]?(\d+)\b`)

// assertedExit is a line of a script that asserts an exit code exactly:
// `exits N PROGRAM...`, after any [condition] prefixes.
var assertedExit = regexp.MustCompile(`^(?:\[[^\]]*\]\s*)*exits\s+(\d+)\s`)

// runsOK is a line that runs a program and requires it to succeed, which
// asserts exit 0 exactly: exec (in the background too: wait checks it),
// or a tool run by name, without `!`.
var runsOK = regexp.MustCompile(`^(?:\[[^\]]*\]\s*)*(?:exec\s|art[a-z]+\s)`)

// UnassertedExits returns the exit codes the testscript script named name
// states (in a comment, or in its name) but never asserts. A script that
// says "exit 2" must hold the tool to exactly 2 with `exits 2 ...`: `!
// exec` alone would also pass on exit 1 or a crash. Exit 0 is asserted by
// any command that must succeed. Only the script part is read, not the
// files after it.
func UnassertedExits(name string, script []byte) []int {
	stated := map[int]bool{}
	asserted := map[int]bool{}
	for _, m := range statedExit.FindAllStringSubmatch(strings.ReplaceAll(strings.TrimSuffix(filepath.Base(name), ".txtar"), "_", " "), -1) {
		n, _ := strconv.Atoi(m[1])
		stated[n] = true
	}
	for _, line := range strings.Split(string(script), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
			break // the archive's files begin
		}
		if strings.HasPrefix(line, "#") {
			for _, m := range statedExit.FindAllStringSubmatch(line, -1) {
				n, _ := strconv.Atoi(m[1])
				stated[n] = true
			}
			continue
		}
		if m := assertedExit.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			asserted[n] = true
		} else if runsOK.MatchString(line) {
			asserted[0] = true
		}
	}
	var missing []int
	for n := range stated {
		if !asserted[n] {
			missing = append(missing, n)
		}
	}
	slices.Sort(missing)
	return missing
}

// FormatExits lists codes as "2, 4".
func FormatExits(codes []int) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ", ")
}
