package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRandomTokenFound: strings drawn as providers draw keys without a
// prefix (lower case and digits, both cases and digits, with '-' or '_'
// inside, 16 to 64 characters) are removed whole, bare, in a log line and
// quoted, and the output is a fixed point. The strings are generated
// here, from the alphabets.
func TestRandomTokenFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	alphabets := []string{
		"abcdefghijklmnopqrstuvwxyz0123456789",
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
	}
	r := New(Options{})
	found, n := 0, 0
	for _, al := range alphabets {
		for _, size := range []int{20, 24, 32, 40, 64} {
			for range 40 {
				b := make([]byte, size)
				for i := range b {
					b[i] = al[rng.IntN(len(al))]
				}
				if rng.IntN(4) == 0 {
					b[size/2] = "-_"[rng.IntN(2)]
				}
				tok := string(b)
				n++
				hit := true
				for _, in := range []string{tok, "2026-12-01 INFO using " + tok + " for the upload", `deploy --with "` + tok + `"`} {
					var sum Summary
					out := r.Text(in, &sum)
					if strings.Contains(out, tok[:8]) || strings.Contains(out, tok[len(tok)-8:]) {
						hit = false
						continue
					}
					if again := r.Text(out, &sum); again != out {
						t.Errorf("%q: not a fixed point: %q", in, again)
					}
				}
				if hit {
					found++
				}
			}
		}
	}
	// The shape tests give up some random strings (a run of English
	// pairs, too few class changes, fewer than three runs of digits: a
	// short token of both cases has few digits); most must go.
	if found*100 < n*75 {
		t.Errorf("random tokens found: %d of %d, want ≥ 75%%", found, n)
	}
}

// TestRandomTokenSparesTaskIDs: art's own task ids (lower-case ULIDs of
// Crockford's alphabet, as lib/queue makes them) stay, whatever their
// random part.
func TestRandomTokenSparesTaskIDs(t *testing.T) {
	const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"
	rng := rand.New(rand.NewPCG(3, 5))
	r := New(Options{})
	for range 2000 {
		b := []byte("01jdz3k5m7")
		for range 16 {
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		for _, in := range []string{string(b), `task "` + string(b) + `" leased`} {
			var sum Summary
			if got := r.Text(in, &sum); got != in {
				t.Fatalf("task id %q changed: %q", in, got)
			}
		}
	}
}

// TestRandomTokenSpares: what looks random but is not a secret stays.
func TestRandomTokenSpares(t *testing.T) {
	r := New(Options{})
	for _, in := range []string{
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"request 6383d6c3-6e77-4de0-bce9-158e9938e7e3 done",
		"pvc-480952e7-f8e0-11e6-af8c-08002736b526",
		"task-01J9ZK3M4X5Y6Z7A8B9C0D1E2FGHJKMNPQRST",
		"01ARZ3NDEKTSV4RRFFQ69G5FAV",
		`{"task":"01jdz3k5m7qv9x2c4e6g8h0jkm","type":"enqueued"}`,
		"claim task-01jdz3k5m7qv9x2c4e6g8h0jkm lease_01jdz3m0a2bc4de6fg8hjk9mnp",
		"pod nginx-deployment-66b6c48dd5-4jtxk restarted",
		"GHSA-xvch-5gv4-984h nightly-2026-11-30 k8s-staging-examples",
		"--- PASS: BenchmarkReadBatch100k TestIPv6Loopback BenchmarkAppendParallel64NoGroup",
		"golang.org/x/oauth2 v0.30.0 h1:dnDm7JmhM45NNpd8FDDeLhK6FwqbOf4MLCM9zb1BOHU=",
		`"integrity": "sha512-2nN1Hc3N2Jg8eN9Wq4u9p6dB3Mg7v7W5tK9bS5dyw5S2nHjGpG3kq5cQjZ3z0z0Rr0G8Y2v7X0w3xkqZl6zQ=="`,
		"Change-Id: I663a86a972ae3ccd2c774921bbe19f950a6938f5",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host",
		"age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
		"-----BEGIN CERTIFICATE-----\nMIIDKjCCAhICAQAwbTELMAkGA1UEBhMCVVMxCzAJBgNVBAgMAkRFMSMwIQYDVQQK\nBQAwajELMAkGA1UEBhMCVVMxIzAhBgNVBAoMGlB5dGhvbiBTb2Z0d2FyZSBGb3Vu",
		"dGFpbmVyL3NpZ21hdmlydXMyNC9wcm9qZWN0L3JlcXVlc3RzL29yZy9wc2F0aA==",
		"x86_64-unknown-linux-gnu aarch64-apple-darwin20",
		// API object ids, as agent transcripts carry them.
		"toolu_01A09q90qw90lq917835lq9 req_011CRZ6fLgR3dK5q8YvW9nQ2 run_4a8Kd92LmQx7Zp3Vb6Ty1Nc5",
		"file-9GqW4zLk2mP8xR5tY7uV3nB1 thread_7Hk2Lm9Pq4Rs8Tv1Wx3Yz6Bc srvtoolu_014hJH82Qum7Td6UV8gDXThB",
		// Names in code, from real Go sources.
		"func newDefaultV4Signer(huffmanMaxSize26 int) { sigV4SigningNameKey{}; arrayApproxEqualFloat16(x) }",
		"DirectSocketDNSQueryTypeIpv4 postProcLMS1_byte S3UnlockBucketPolicy LightPaleGreenBlue6",
		"const k = 0x02a2e85470d6fd96 // see group__API.html#gaa1b8970169fd4883a6dc4a8f43f19b67",
		"internal-my-elb-1234567890abcdef.us-east-1.elb.amazonaws.com",
		"/var/lib/docker/overlay2/l/Q4K3ZLD2ZQ5JV6GXN5Q7Y3YQ5P/diff",
	} {
		var sum Summary
		if got := r.Text(in, &sum); got != in {
			t.Errorf("%q changed: %q", in, got)
		}
	}
}

func FuzzRandomToken(f *testing.F) {
	for _, s := range []string{"bhyey6r0hrik06gv0i0eed0ry7g5gfr6", "a=b9f1b9bu2gg9d70ksfmehoisr==x", "[REDACTED:random-token]x0x0x0x0x0x0x0x0", "+52s-z2bmh4f9k=j-7p94t/a6ww"} {
		f.Add(s)
	}
	r := New(Options{})
	f.Fuzz(func(t *testing.T, s string) {
		var sp []span
		for _, x := range randomSpans(s, sp) {
			if x.a < 0 || x.b > len(s) || x.a >= x.b {
				t.Fatalf("span [%d,%d) outside %q", x.a, x.b, s)
			}
		}
		out := r.AppendAttrs(nil, map[string]any{"v": s}, nil, &Summary{})
		assertFixedPoint(t, r, out, "fuzz random token")
	})
}
