//go:build linux && amd64

package filters

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter decides every syscall as the two programs it replaced did
// together (testdata/legacy-programs-amd64.txt; the kernel takes the
// strictest verdict of all filters): for the native, i386 and an unknown
// architecture, every syscall number of the native table and beyond, the
// x32 numbers, and for each number argument values that hit every rule
// and its edges, plus random ones — run in x/net/bpf's interpreter.
func TestSameVerdicts(t *testing.T) {
	legacyPrograms := readLegacy(t)
	for _, denyUnix := range []bool{false, true} {
		legacy := legacyPrograms["legacyAllowUnix"]
		if denyUnix {
			legacy = legacyPrograms["legacyDenyUnix"]
		}
		if len(legacy) != 2 {
			t.Fatalf("denyUnix %v: %d legacy programs; want 2", denyUnix, len(legacy))
		}
		now, err := Programs("landlock", denyUnix)
		if err != nil {
			t.Fatal(err)
		}
		if len(now) != 1 {
			t.Fatalf("%d programs; want one", len(now))
		}
		newVM := vm(t, now[0])
		oldVMs := []*bpf.VM{vm(t, legacy[0]), vm(t, legacy[1])}
		interesting := []uint32{0, 1, 2, 3, 10, unix.TIOCSTI, unix.TIOCLINUX, unix.TCGETS, unix.AF_UNIX, unix.AF_INET, unix.AF_INET6,
			unix.AF_NETLINK, unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_STREAM | unix.SOCK_CLOEXEC | unix.SOCK_NONBLOCK,
			unix.IPPROTO_TCP, unix.IPPROTO_MPTCP, unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_VM | unix.CLONE_FS,
			unix.S_ISUID, unix.S_ISGID, 0o755, 0o4755, unix.O_CREAT, unix.O_TMPFILE, unix.O_RDWR, 0xffffffff, 0x80000000}
		rng := rand.New(rand.NewPCG(1, 2))
		args := make([][12]uint32, 0, 600)
		args = append(args, [12]uint32{})
		for range 400 { // arguments drawn from the interesting values, low and high halves
			var a [12]uint32
			for i := range a {
				if rng.IntN(3) > 0 {
					a[i] = interesting[rng.IntN(len(interesting))]
				}
			}
			args = append(args, a)
		}
		for range 100 {
			var a [12]uint32
			for i := range a {
				a[i] = rng.Uint32()
			}
			args = append(args, a)
		}
		var nrs []uint32
		for nr := uint32(0); nr < 1100; nr++ {
			nrs = append(nrs, nr)
		}
		for nr := uint32(0x40000000); nr < 0x40000000+600; nr += 7 {
			nrs = append(nrs, nr)
		}
		nrs = append(nrs, 0x3fffffff, 0x7fffffff, 0x80000000, 0xffffffff)
		checked := 0
		for _, archID := range []uint32{unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_I386, 0} {
			for _, nr := range nrs {
				for _, a := range args {
					in := seccompData(nr, archID, a)
					want := strictest(t, oldVMs, in)
					got := run(t, newVM, in)
					if got != want {
						t.Fatalf("denyUnix %v: arch %#x nr %d args %#x: verdict %#x; the two programs before: %#x", denyUnix, archID, nr, a, got, want)
					}
					checked++
				}
			}
		}
		t.Logf("denyUnix %v: %d inputs, same verdicts", denyUnix, checked)
	}
}

// readLegacy reads the programs before, by name, in order.
func readLegacy(t *testing.T) map[string][][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/legacy-programs-amd64.txt")
	if err != nil {
		t.Fatal(err)
	}
	progs := map[string][][]byte{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || strings.HasPrefix(line, "#") {
			continue
		}
		b, err := hex.DecodeString(f[2])
		if err != nil {
			t.Fatal(err)
		}
		progs[f[0]] = append(progs[f[0]], b)
	}
	return progs
}

func vm(t *testing.T, prog []byte) *bpf.VM {
	t.Helper()
	var ins []bpf.Instruction
	for i := 0; i+8 <= len(prog); i += 8 {
		ins = append(ins, bpf.RawInstruction{
			Op: binary.NativeEndian.Uint16(prog[i:]), Jt: prog[i+2], Jf: prog[i+3], K: binary.NativeEndian.Uint32(prog[i+4:]),
		}.Disassemble())
	}
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// seccompData is struct seccomp_data laid out for x/net/bpf's
// interpreter, which loads words big-endian: each 32-bit field the
// filters load is written so, at its offset (nr 0, arch 4, the args'
// halves from 16).
func seccompData(nr, archID uint32, args [12]uint32) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], archID)
	for i, v := range args {
		binary.BigEndian.PutUint32(b[16+4*i:], v)
	}
	return b
}

func run(t *testing.T, v *bpf.VM, in []byte) uint32 {
	t.Helper()
	r, err := v.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(r)
}

// strictest is the kernel's verdict over filters installed in order: the
// lowest action (as a signed 32-bit number) wins, and among equal
// actions the most recently installed filter's.
func strictest(t *testing.T, vms []*bpf.VM, in []byte) uint32 {
	t.Helper()
	const actionFull = 0xffff0000
	ret := uint32(unix.SECCOMP_RET_ALLOW)
	for i := len(vms) - 1; i >= 0; i-- {
		cur := run(t, vms[i], in)
		if int32(cur&actionFull) < int32(ret&actionFull) {
			ret = cur
		}
	}
	return ret
}
