package redact

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
)

// draw makes n characters of alphabet al.
func draw(rng *rand.Rand, al string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = al[rng.IntN(len(al))]
	}
	return string(b)
}

// genPassword draws a generated password: every class present, symbols
// from !@#$~ among letters and digits, no run of four lower-case letters.
func genPassword(rng *rand.Rand, n int) string {
	classes := []string{"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "!@#$~"}
	b := []byte{'A' + byte(rng.IntN(26)), 'a' + byte(rng.IntN(26)), '0' + byte(rng.IntN(10)), '0' + byte(rng.IntN(10)), "!@#$~"[rng.IntN(5)]}
	for len(b) < n {
		k := rng.IntN(4)
		if k == 3 && rng.IntN(3) > 0 {
			k = rng.IntN(3) // symbols are rarer
		}
		b = append(b, classes[k][rng.IntN(len(classes[k]))])
	}
	rng.Shuffle(len(b)-1, func(i, j int) { b[i+1], b[j+1] = b[j+1], b[i+1] }) // a letter first
	return string(b)
}

// TestPasswordFound: generated passwords are removed whole, bare, in a
// log line, quoted and after '='; the output is a fixed point.
func TestPasswordFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 17))
	r := New(Options{})
	found, n := 0, 0
	for range 300 {
		pw := genPassword(rng, 10+rng.IntN(20))
		if !password(pw) {
			continue // the draw broke a shape rule (a run of four lower-case letters, too few changes)
		}
		n++
		hit := true
		for _, in := range []string{pw, "2026-12-01 INFO login with " + pw + " ok", `db --pass "` + pw + `"`, "PGPASS=" + pw} {
			var sum Summary
			out := r.Text(in, &sum)
			if strings.Contains(out, pw[:5]) || strings.Contains(out, pw[len(pw)-5:]) {
				hit = false
				t.Errorf("%q: left %q", in, out)
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
	if n < 150 {
		t.Fatalf("only %d of 300 drawn passwords pass the shape; the generator is off", n)
	}
}

// TestShapedSpares: code, handles, versions, paths and format strings
// with symbols in them stay.
func TestShapedSpares(t *testing.T) {
	r := New(Options{})
	for _, in := range []string{
		"oob := make([]byte, unix.CmsgSpace(maxServeFDs*4))",
		"int(dosTime&0x1f*2), int(dosDate&0x1f)",
		"- task: AzureKeyVault@2",
		"@JohnSmith1980 #Release2026v2 $HOME_DIR1x",
		"user1@Example2.com see https://Host9x@example.com/a",
		"printf '%08X%5dAbc1!' ; if (!isReady2X) {}",
		"npm i left-pad@1.3.0 @scope/Pkg2@4.1.2",
		"Summer2024!Vacation",                              // a run of lower-case letters: a written word, given up
		"x9;Lk(Ab1$Cd2@Ef3#Gh4'Qz{Wm>Np<Rt7}Uv8|Xy9Za0Bc1", // base85 of a binary patch
		"<ipython-input-4-00e7077cfb5b> in <module>()",
		// Encoded data: a data: URI's payload, an XMP image's lines.
		`<image xlink:href="data:image/png;base64,` + strings.Repeat("iVBORw0KGgoAAAANSUhEUgAAAMYAAAC8CAYAAAAjItH6+/", 4) + `x7Kq2mZ9vRw4Tn8pLc3YbH6sJd1Fg5Qe+AAAA"/>`,
		`<xmpGImg:image>/9j/4AAQSkZJRgABAgEASABIAAD&#xA;` + strings.Repeat("AQBIAAAAAQAB+4ADkFkb2JlAGTAAAAAAf&#xA;", 6) + `q7dQPUNlIaulTHVQ7cDvEgJ1nyxQyx&#xA;</xmpGImg:image>`,
		// Lines of base64 blocks in diffs.
		"@@ -1507,39 +1339,6 @@ igxyUA4MlXqA69qHKA71ghTZLxGYEazcPGce8eORP5SYCp4Ua6iVkIVQ70I0\n q7dQPUNlIaulTHVQ7cDvEgJ1nyxQyxkSiTaBQyHuWeER4T5eSChw1Yu0TZz7",
		"yM6nhwKq0Y1M7qka8OAiQx3jG76NJ0VImjW3VzSvotpDgX1A5xjYDQ==\n-----END CERTIFICATE-----",
		// base64 of text that is not id:secret.
		base64.StdEncoding.EncodeToString([]byte("tcp://127.0.0.1:5705")),
		base64.StdEncoding.EncodeToString([]byte("localhost:8080")),
		base64.StdEncoding.EncodeToString([]byte("name: value with spaces")),
		base64.StdEncoding.EncodeToString([]byte("browser:")),
	} {
		var sum Summary
		if got := r.Text(in, &sum); got != in {
			t.Errorf("%q changed: %q", in, got)
		}
	}
}

// TestBase64CredentialFound: base64 of id:secret goes whole, in both
// alphabets, padded or not.
func TestBase64CredentialFound(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	r := New(Options{})
	const idChars = "abcdefghijklmnopqrstuvwxyz0123456789._-"
	const secretChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!$%&*+-_"
	for range 200 {
		cred := "u" + draw(rng, idChars, 3+rng.IntN(12)) + ":" + draw(rng, secretChars, 6+rng.IntN(40))
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			tok := enc.EncodeToString([]byte(cred))
			if strings.ContainsAny(tok, "+/") {
				continue // the standard alphabet's + and / cut a token: the decoder's
			}
			for _, in := range []string{tok, "auth " + tok + " ok", `{"auth":"` + tok + `"}`} {
				var sum Summary
				out := r.Text(in, &sum)
				if strings.Contains(out, tok[:8]) || strings.Contains(out, tok[len(tok)-8:]) {
					t.Errorf("%q (%q): left %q", in, cred, out)
				}
			}
		}
	}
}

// TestRandomTokenShortAndMixed: the shapes measured on gitleaks' samples
// of prefix-less keys: 14 and 15 characters of lower case and digits, two
// runs of digits in a long lower-case token, and both cases alternating
// without digits.
func TestRandomTokenShortAndMixed(t *testing.T) {
	r := New(Options{})
	for _, tok := range []string{
		"q7xk2vn9bw4mz8", "t3k9vq2xn7bm5wz",
		"cve6pr5n8i4p40mgg1w1",
		"ADUdRPPgdzUvZgpmmICiBlrDpeCZJgdPIafWpk",
		"KLzdocJisAjIhKtJRlgLKOmxgJTeKd",
		"KEY-4BABC675dad0AA9B5629Bc51d01b14b6",
	} {
		var sum Summary
		if out := r.Text("using "+tok+" now", &sum); strings.Contains(out, tok[:6]) {
			t.Errorf("%q left: %q", tok, out)
		}
	}
	for _, in := range []string{
		"apiKeyAddOffsetsToTxn WSSX509V3Token10 TestHTTPServerCloseIdleConns",
		"ubuntu2204lts x86_64linux",
	} {
		var sum Summary
		if got := r.Text(in, &sum); got != in {
			t.Errorf("%q changed: %q", in, got)
		}
	}
}

// TestIDInfixFormats: tokens written id<sep>secret whose id is a number of
// a known length range.
func TestIDInfixFormats(t *testing.T) {
	r := New(Options{})
	for _, c := range []struct{ in, secret string }{
		{"bot 1043321819600133:Adz1C5Jau2RJtBRnlWmTSHf6pWkLUyifDLk ok", "Adz1C5Jau2RJtBRnlWmTSHf6pWkLUyifDLk"},
		{"bot 110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9 ok", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw9"},
		{"app 3164752553419283|u7WICPhDeOZIiBOB-Y6sHrFH2ZU ok", "u7WICPhDeOZIiBOB-Y6sHrFH2ZU"},
		{"patoiGFfWd3hjOkYR.d2cce8038a39d5e0853964b50af03b971722f244f58d669cbee3772a07702172", "d2cce8038a39d5e0"},
	} {
		var sum Summary
		out := r.Text(c.in, &sum)
		if strings.Contains(out, c.secret[:10]) {
			t.Errorf("%q: left %q", c.in, out)
		}
		if strings.Count(out, "[REDACTED:") != 1 {
			t.Errorf("%q: want one marker: %q", c.in, out)
		}
	}
	for _, in := range []string{
		"at 12:30:45 the 1234:Abcdefghijklmnopqrstuvwxyz01234567 moved", // id too short
		"a|b 123456789012345|short",
	} {
		var sum Summary
		if got := r.Text(in, &sum); got != in {
			t.Errorf("%q changed: %q", in, got)
		}
	}
}

func FuzzShaped(f *testing.F) {
	for _, s := range []string{"Xk7!mQ2pZr", "hT4$wN8qLx3#Vb", base64.StdEncoding.EncodeToString([]byte("admin:password")), "x!Y2z3", "[REDACTED:random-token]A1!b2@C3#d",
		"su1Y5zpGESUOdj", "10f61582:ab6220d0:", "x 16a7b188a55f0c8122829de68ec61652-0a001111-22223b33.", "6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3"} {
		f.Add(s)
	}
	r := New(Options{})
	f.Fuzz(func(t *testing.T, s string) {
		for _, x := range randomSpans(s, nil) {
			if x.a < 0 || x.b > len(s) || x.a >= x.b {
				t.Fatalf("span [%d,%d) outside %q", x.a, x.b, s)
			}
		}
		_ = base64Credential(s)
		out := r.AppendAttrs(nil, map[string]any{"v": s}, nil, &Summary{})
		assertFixedPoint(t, r, out, "fuzz shaped")
	})
}
