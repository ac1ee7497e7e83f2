package redact

import (
	"crypto/sha256"
	"encoding/base64"
	"math"
	"strings"
)

// The random-token rule finds a secret by its shape alone: a bare string
// that looks generated, as API keys, client secrets and access tokens of
// most providers do when they carry no prefix. gitleaks finds those only
// after a keyword ("heroku_api_key = …"); a draft often has the token
// alone (a value, an argument, a line of output).
//
// A token is a maximal run of letters, digits and "_-" (with trailing "="
// padding), bounded by other bytes. It is taken when, measured on
// gitleaks' published samples and on real text (scripts/redact-report.sh;
// docs/artobs.md gives both figures):
//
//   - it is 14 to 256 characters long and holds no '+' or '/' (a base64
//     blob: certificates, hashes, encoded text are the decoder's);
//   - it has lower-case letters, and either digits with letters and digits
//     alternating (a class change every 5 characters or more often, three
//     runs of digits or more, two if it has no capitals: camelCase names
//     carry one or two numbers), or, 24 characters or more, both cases
//     alternating (a class change every 2.2 characters, two pairs of
//     adjacent capitals or more: a camelCase name has them only in
//     acronyms; one pair when the class changes every 1.67 characters); one of its '-'/'_' parts of 12+ characters mixes them and
//     is not a ULID (art's task ids are lower-case ULIDs; task-01J9ZK…),
//     and slugs such as nginx-7c5ddbdf54-x2vq9, GHSA-xvch-5gv4-984h,
//     nightly-2026-11-30 stay;
//   - its Shannon entropy is above 3.5 bits (a token without capitals:
//     above log2(length) - 0.6 if that is lower, as a short string cannot
//     reach 3.5);
//   - at most 35% of its letter pairs are common English pairs (th, er,
//     in …; one more pair allowed for a token without capitals, and one
//     more with five runs of digits, whose few letter pairs say little):
//     BenchmarkReadBatch100k, TestIPv6Loopback are names;
//   - it is not hex, '-' and '_' aside (git hashes, digests, ids, trace
//     ids: a secret of hex digits needs a name or a prefix), but for hex
//     of both cases (mixedCaseHex), does not hold
//     a UUID (or lower-case letters and digits in a UUID's layout), is not
//     a Gerrit Change-Id (I + 40 hex), hex after a short tag (0x…), an
//     integrity hash (sha512-…, h1:…), public material (DER in base64, an
//     SSH key blob, a bech32 public key or address, a line inside a PEM
//     block), an API object id (a lower-case word and '_' or '-' before a
//     single part: toolu_…, msg_…, req_…), a line of a base64 block (lines
//     of one length, also after a diff's hunk header, or the padded last
//     line before another block or a PEM END line, or after a block's
//     full line, a line of a certificate's body whose BEGIN is cut off,
//     a line of 64 after a hunk header with the padded last line after it), part of a run of 256 base64 characters or more (a data:
//     URI, an image in XMP), the start of a data: URI's payload, base64 of
//     text, a version-4 UUID in 22 characters of base64 (Elasticsearch's
//     node ids), XMP's fixed packet id or a Bitcoin address (its
//     checksum right).
const (
	randomMin         = 14
	randomMax         = 256
	randomEntropy     = 3.5
	randomEntropyGap  = 0.6
	randomWordy       = 0.35
	randomChanges     = 0.2
	randomCasesMin    = 24
	randomCaseChanges = 0.45
	randomCaseDense   = 0.6
	randomDigitRuns   = 5
)

// randomChar: the bytes of a token the rule looks at.
var randomChar = makeClass("_-", true)

// commonPairs are the 80 most frequent letter pairs of English text.
var commonPairs = func() *[26 * 26]bool {
	var t [26 * 26]bool
	for _, p := range strings.Fields("th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly nc et ut ss so rs un lo wa ge ie wh") {
		t[int(p[0]-'a')*26+int(p[1]-'a')] = true
	}
	return &t
}()

// randomSpans appends the spans of random-looking tokens and generated
// passwords (shaped.go) in s.
func randomSpans(s string, sp []span) []span {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '[' {
			i = pastMarker(s, i)
			continue
		}
		if !randomChar[c] {
			if pwSymbol[c] {
				sp, i = passwordAt(s, i, sp)
			}
			continue
		}
		a := i
		b := runOf(s, i, randomChar)
		i = b - 1
		if base64UUID(s[a:b]) {
			continue // before trimming: base64url may start with '_'
		}
		// A token neither starts nor ends with '-' or '_' (a diff's "-",
		// an option's "--", a name's "_").
		for a < b && (s[a] == '-' || s[a] == '_') {
			a++
		}
		for b > a && (s[b-1] == '-' || s[b-1] == '_') {
			b--
		}
		if e := layoutToken(s, a, b); e > 0 {
			sp = append(sp, span{a: a, b: e, rule: ProviderLayout})
			i = e - 1
			continue
		}
		if b-a < randomMin || b-a > randomMax {
			continue
		}
		// Bounded: not part of a base64 blob, a path, a host name or a
		// file name, nor glued to non-ASCII text.
		if (a > 0 && (s[a-1] == '+' || s[a-1] == '/' || s[a-1] == '\\' || s[a-1] == '.' || s[a-1] >= 0x80)) ||
			(b < len(s) && (s[b] == '+' || s[b] == '/' || s[b] >= 0x80)) ||
			(b+1 < len(s) && s[b] == '.' && letters[s[b+1]]) {
			continue
		}
		e := b
		for e < len(s) && e-b < 2 && s[e] == '=' {
			e++
		}
		if e < len(s) && e > b && (tokenChar[s[e]] || s[e] == '+' || s[e] == '/') {
			e = b // "=value": an assignment, not padding
		}
		if base64Credential(s[a:e]) {
			sp = append(sp, span{a: a, b: e, rule: Base64Credentials})
			continue
		}
		if !randomToken(s[a:b]) || hashTagged(s, a) || inPEM(s, a) || base64Block(s, a, e) || base64Text(s[a:e]) || inEncodedRun(s, a, e) ||
			dataURI(s, a) || blockTail(s, a, e) {
			continue
		}
		sp = append(sp, span{a: a, b: e, rule: RandomToken})
	}
	return sp
}

// randomToken applies the shape tests to one token (see above).
func randomToken(t string) bool {
	n, changes := classCounts(t)
	lower, upper, digit := n[0], n[1], n[2]
	pairs, common := letterPairs(t)
	hex := true
	for i := 0; i < len(t); i++ {
		if c := t[i]; !isHex(c) && c != '-' && c != '_' {
			hex = false
		}
	}
	if hex {
		return mixedCaseHex(t, n)
	}
	if lower == 0 || hexAfterTag(t) {
		return false
	}
	// Lower case and digits alternating, or (no digits needed) both cases
	// alternating as only generated strings do.
	runs := 3
	if upper == 0 && len(t) >= 16 {
		runs = 2 // no capitals: no camelCase name (ubuntu2204lts stays wordy)
	}
	digits := digit > 0 && float64(changes) >= randomChanges*float64(len(t)) && digitRuns(t) >= runs
	cases := len(t) >= randomCasesMin && upper >= 4 && lower >= 4 && float64(changes) >= randomCaseChanges*float64(len(t)) &&
		(upperPairs(t) >= 2 || upperPairs(t) == 1 && float64(changes) >= randomCaseDense*float64(len(t)))
	if !digits && !cases {
		return false // an identifier (sigV4SigningNameKey, ColumnTypeEnum16) or a tagged hash
	}
	loose := upper == 0 || cases
	margin, gap := 0.0, 0.0
	if loose {
		margin, gap = 1, randomEntropyGap
	}
	if digitRuns(t) >= randomDigitRuns {
		margin++ // digits all along: its few letter pairs say little
	}
	if pairs > 0 && float64(common) > randomWordy*float64(pairs)+margin {
		return false
	}
	if !mixedPart(t, cases) || holdsUUID(t) || base64UUID(t) || t == xmpPacketID || pngEnd(t) || gerritChangeID(t) || publicForm(t) || objectID(t) || bitcoinAddress(t) {
		return false
	}
	return shannonEntropy(t) > min(randomEntropy, math.Log2(float64(len(t)))-gap)
}

// letterPairs counts t's pairs of adjacent letters, and those of them
// common in English.
func letterPairs(t string) (pairs, common int) {
	for i := 1; i < len(t); i++ {
		if c := t[i]; letters[c] && letters[t[i-1]] {
			pairs++
			if commonPairs[int(t[i-1]|0x20-'a')*26+int(c|0x20-'a')] {
				common++
			}
		}
	}
	return pairs, common
}

// mixedCaseHex: 32 hex digits or more, no separators, holding upper- and
// lower-case letters (four of each) and digits: no tool writes a hash or
// an id so (they write one case), a key generator may
// (6d2FabeB6ADd229Bc199…).
func mixedCaseHex(t string, n [4]int) bool {
	return len(t) >= 32 && n[3] == 0 && n[0] >= 4 && n[1] >= 4 && n[2] >= 4
}

// upperPairs counts adjacent capitals: a camelCase name has them only in
// acronyms, a generated mixed-case string every few characters.
func upperPairs(t string) int {
	n := 0
	for i := 1; i < len(t); i++ {
		if isUpper(t[i]) && isUpper(t[i-1]) {
			n++
		}
	}
	return n
}

// encodedRun: a run of base64 characters this long (a line break
// written as XML's "&#xA;" counts as one of them) is encoded data: a data:
// URI's payload, an image in XMP, a blob in a config; no key is that long.
const encodedRun = 256

// b64Any: the bytes of base64 in either alphabet, with padding.
var b64Any = makeClass("+/=_-", true)

// inEncodedRun: s[a:b] lies in a run of encodedRun base64 characters or
// more.
func inEncodedRun(s string, a, b int) bool {
	n := b - a
	for i := a; i > 0 && n < encodedRun; n++ {
		switch {
		case b64Any[s[i-1]]:
			i--
		case i >= 5 && s[i-5:i] == "&#xA;":
			i -= 5
		default:
			i = 0
			n--
		}
	}
	for j := b; j < len(s) && n < encodedRun; n++ {
		switch {
		case b64Any[s[j]]:
			j++
		case strings.HasPrefix(s[j:], "&#xA;"):
			j += 5
		default:
			j = len(s)
			n--
		}
	}
	return n >= encodedRun
}

// charClass: 0 lower case, 1 upper case, 2 digit, 3 anything else.
func charClass(c byte) int {
	switch {
	case isLower(c):
		return 0
	case isUpper(c):
		return 1
	case isDigit(c):
		return 2
	}
	return 3
}

// classCounts counts t's bytes per charClass, and the changes of class
// between neighbours.
func classCounts(t string) (n [4]int, changes int) {
	for i := 0; i < len(t); i++ {
		k := charClass(t[i])
		n[k]++
		if i > 0 && k != charClass(t[i-1]) {
			changes++
		}
	}
	return n, changes
}

// publicForm: the token starts the way public material does: DER in
// base64 ("MI…", "MC…": certificates, public keys), an SSH public key blob
// ("AAAA…": a length-prefixed key type), a bech32 public key or address
// (age1…, npub1…, bc1…), an integrity hash (sha512-…).
func publicForm(t string) bool {
	if t[0] == 'M' && t[1] >= 'A' && t[1] <= 'I' {
		return true
	}
	for _, p := range []string{"AAAA", "age1", "npub1", "bc1q", "bc1p", "tb1q", "ltc1", "addr1", "sha1-", "sha256-", "sha384-", "sha512-"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// inPEM: position a lies inside a PEM block whose BEGIN line is at most
// 4 KiB before it (a certificate's or a public key's body; private keys
// are the private-key rule's).
func inPEM(s string, a int) bool {
	lo := max(0, a-4096)
	k := strings.LastIndex(s[lo:a], "-----BEGIN ")
	return k >= 0 && !strings.Contains(s[lo+k:a], "-----END ")
}

// digitRuns counts the runs of digits in t: a generated token has digits
// all along it (a third of a lower-case-and-digit alphabet), a name a
// written one or two (huffmanMaxSize26, newDefaultV4Signer).
func digitRuns(t string) int {
	n := 0
	for i := 0; i < len(t); i++ {
		if isDigit(t[i]) && (i == 0 || !isDigit(t[i-1])) {
			n++
		}
	}
	return n
}

// hexAfterTag: hex digits after a tag of up to three letters (0x…, a
// doxygen anchor ga…): a number or a hash.
func hexAfterTag(t string) bool {
	for k := 1; k <= 3 && k < len(t); k++ {
		if !letters[t[k-1]] && t[k-1] != '0' {
			return false
		}
		rest := t[k:]
		if len(rest) >= 16 && strings.Trim(strings.ToLower(rest), "0123456789abcdef") == "" {
			return true
		}
	}
	return false
}

// objectID: a lower-case word of 2 to 12 letters, then '_' or '-', then
// the id: the object ids APIs hand out and agent transcripts are full of
// (toolu_01A09q…, msg_01XF…, req_011C…, call_8fJ2…, file-9GqW…,
// thread_7Hk2…, cus_…). Keys with such a prefix are the provider formats'
// (ghp_, sk_live_, xoxb-, glpat- …), which find them by the prefix.
func objectID(t string) bool {
	k := strings.IndexAny(t, "_-")
	if k < 2 || k > 12 || k+1 >= len(t) {
		return false
	}
	for i := 0; i < k; i++ {
		if !isLower(t[i]) {
			return false
		}
	}
	if strings.ContainsAny(t[k+1:], "_-") {
		return false // more parts: a generated string with separators
	}
	return alnum[t[k+1]]
}

// mixedPart: one of the '-'/'_' separated parts of t, 12+ characters
// long, holds both lower-case letters and digits and is not hex of one
// case (task-01J9ZK…, a ULID after a word, and
// ipython-input-4-00e7077cfb5b, a hash after words, do not; hex of both
// cases is no hash: KEY-4BABC675dad0AA9B…).
func mixedPart(t string, cases bool) bool {
	for _, p := range strings.FieldsFunc(t, func(r rune) bool { return r == '-' || r == '_' }) {
		if len(p) >= 12 && !isULID(p) && !hashPart(p) && (strings.ContainsAny(p, "0123456789") || cases && strings.ContainsAny(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")) && strings.ContainsAny(p, "abcdefghijklmnopqrstuvwxyz") {
			return true
		}
	}
	return false
}

// hashPart: p is hex digits of one case.
func hashPart(p string) bool {
	return strings.Trim(p, "0123456789abcdef") == "" || strings.Trim(p, "0123456789ABCDEF") == ""
}

// isULID: 26 characters of Crockford's base32 (no i, l, o, u) in one case,
// the first of them 0-7: a ULID, and the form of art's own task ids
// (lib/queue's NewID, lower case), which events carry everywhere. The
// first ten characters are the time, so ids of this century start "0".
func isULID(p string) bool {
	if len(p) != 26 || p[0] < '0' || p[0] > '7' {
		return false
	}
	lower, upper := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case isDigit(c):
		case isLower(c) && strings.IndexByte("ilou", c) < 0:
			lower = true
		case isUpper(c) && strings.IndexByte("ILOU", c) < 0:
			upper = true
		default:
			return false
		}
	}
	return !(lower && upper)
}

// holdsUUID: t contains 8-4-4-4-12 hex digits (pvc-480952e7-f8e0-…), or
// lower-case letters and digits in that layout (an id with a typo in it).
func holdsUUID(t string) bool {
	for i := 0; i+36 <= len(t); i++ {
		if isUUID(t[i : i+36]) {
			return true
		}
	}
	return false
}

func isUUID(u string) bool {
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			if u[i] != '-' {
				return false
			}
		default:
			if !isHex(u[i]) && !isLower(u[i]) && !isDigit(u[i]) {
				return false
			}
		}
	}
	return true
}

// base64UUID: 22 characters of base64 (either alphabet, unpadded) that
// decode to a version-4 UUID, version and variant bits in place: an id
// written short (Elasticsearch's node, cluster and index ids). A random
// 22-character token has those six bits one time in 64.
func base64UUID(t string) bool {
	if len(t) != 22 {
		return false
	}
	var u [16]byte
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
		if n, err := enc.Decode(u[:], []byte(t)); err == nil && n == 16 {
			return u[6]>>4 == 4 && u[8]>>6 == 2
		}
	}
	return false
}

// bitcoinAddress: a Base58Check Bitcoin address (version 0 or 5: "1…",
// "3…", 25 bytes, its double-SHA-256 checksum right): public, printed on
// donation pages. A random token passes the checksum once in 2^32.
func bitcoinAddress(t string) bool {
	if len(t) < 26 || len(t) > 35 || t[0] != '1' && t[0] != '3' {
		return false
	}
	var b [25]byte // big-endian: b = b*58 + digit
	for i := 0; i < len(t); i++ {
		k := strings.IndexByte(base58, t[i])
		if k < 0 {
			return false
		}
		carry := k
		for j := len(b) - 1; j >= 0; j-- {
			carry += int(b[j]) * 58
			b[j] = byte(carry)
			carry >>= 8
		}
		if carry != 0 {
			return false // more than 25 bytes
		}
	}
	if t[0] == '1' && b[0] != 0 || t[0] == '3' && b[0] != 5 {
		return false
	}
	h := sha256.Sum256(b[:21])
	h = sha256.Sum256(h[:])
	return string(h[:4]) == string(b[21:])
}

const base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// pngEnd: the token ends the way base64 of a PNG file does: the empty
// IEND chunk and its fixed CRC, at each of base64's three alignments.
func pngEnd(t string) bool {
	for _, end := range []string{"AAAAAElFTkSuQmCC", "AAAABJRU5ErkJggg", "AAAAASUVORK5CYII"} {
		if strings.HasSuffix(strings.TrimRight(t, "="), end) {
			return true
		}
	}
	return false
}

// xmpPacketID is the id of every XMP packet header (<?xpacket begin="…"
// id="W5M0MpCehiHzreSzNTczkc9d"?>), fixed by the XMP specification: images
// and SVG files carry it.
const xmpPacketID = "W5M0MpCehiHzreSzNTczkc9d"

// dataURI: the token at a starts the payload of a data: URI
// ("data:image/png;base64,iVBORw0K…"): encoded data, cut short when the
// draft ends or the payload is wrapped.
func dataURI(s string, a int) bool {
	return a >= 7 && s[a-7:a] == "base64,"
}

// blockTail: the padded token s[a:e] starts its line, and the line before
// is base64 alone, 40 characters or more and no shorter: the last line of
// a wrapped block, the end of the attribute after it (an SVG image's
// `…ErkJggg==" transform=…`).
func blockTail(s string, a, e int) bool {
	ls, _ := lineAround(s, a, e)
	if ls == 0 || s[e-1] != '=' || lineBody(s[ls:a]) != "" {
		return false
	}
	prev := strings.TrimRight(lineBody(s[strings.LastIndexByte(s[:ls-1], '\n')+1:ls-1]), "\r")
	return len(prev) >= 40 && len(prev) >= e-a && runOf(prev, 0, b64Std) == len(prev)
}

// gerritChangeID: "I" followed by 40 hex digits.
func gerritChangeID(t string) bool {
	return len(t) == 41 && t[0] == 'I' && isHexRun(t[1:])
}

// hashTagged: the token follows an integrity tag (h1:, sha512-…).
func hashTagged(s string, a int) bool {
	for _, tag := range []string{"h1:", "sha1-", "sha256-", "sha384-", "sha512-", "sha256:"} {
		if a >= len(tag) && s[a-len(tag):a] == tag {
			return true
		}
	}
	return false
}

// base64Block: the token is a whole line of a block of base64 lines of
// one length (a certificate, a key file, an encoded blob), cut into lines
// as PEM and MIME cut them.
func base64Block(s string, a, b int) bool {
	ls, le := lineAround(s, a, b)
	if pre := lineBody(s[ls:a]); pre != "" && !hunkHeader(pre) || strings.TrimRight(s[b:le], "\r") != "" {
		return false
	}
	if le < len(s) && (strings.HasPrefix(s[le+1:], "-----END ") || strings.HasPrefix(lineBody(s[le+1:]), "-----END ")) {
		return true // the last line of a PEM body whose BEGIN is cut off
	}
	if le < len(s) && publicPEMAhead(s[le+1:]) {
		return true // a line of a certificate's body whose BEGIN is cut off
	}
	n := b - a
	same := func(line string, last bool) bool {
		line = strings.TrimRight(lineBody(line), "\r")
		if strings.HasPrefix(line, "@@ -") {
			if k := strings.Index(line[3:], " @@ "); k >= 0 {
				line = line[3+k+4:] // the line the hunk starts after
			}
		}
		k := runOf(line, 0, b64Std)
		// A block's lines have one length; its last may be shorter.
		return k == len(line) && (k == n || last && k > n && k >= 40)
	}
	if ls > 0 {
		ps := strings.LastIndexByte(s[:ls-1], '\n') + 1
		if same(s[ps:ls-1], true) || dataURILine(strings.TrimRight(s[ps:ls-1], "\r")) {
			return true
		}
	}
	if le < len(s) {
		ne := strings.IndexByte(s[le+1:], '\n')
		if ne < 0 {
			ne = len(s)
		} else {
			ne += le + 1
		}
		if same(s[le+1:ne], false) {
			return true
		}
		// The padded last line of a block, another block after it (a
		// diff that replaces one key or certificate with another).
		next := strings.TrimRight(lineBody(s[le+1:ne]), "\r")
		if s[b-1] == '=' && len(next) >= 40 && runOf(next, 0, b64Std) == len(next) {
			return true
		}
		// A line of PEM's width after a diff's hunk header, the shorter
		// last line of its block after it (padded, or holding '+' or '/').
		return hunkHeader(lineBody(s[ls:a])) && n == 64 && len(next) >= 8 && len(next) < n && runOf(next, 0, b64Std) == len(next) &&
			strings.ContainsAny(next, "=+/")
	}
	return false
}

// publicPEMAhead: the lines of rest are base64 (a diff's marker and
// indentation aside) up to a PEM END line that is no private key's, within
// 64 lines: the body of a certificate or public key whose BEGIN line the
// draft cut off. A private key's body is the private-key rule's.
func publicPEMAhead(rest string) bool {
	for n := 0; n < 64 && rest != ""; n++ {
		line, next, _ := strings.Cut(rest, "\n")
		body := strings.TrimRight(lineBody(line), "\r")
		if end := strings.TrimLeft(line, " \t"); strings.HasPrefix(body, "-----END ") || strings.HasPrefix(end, "-----END ") {
			return !strings.Contains(body, "PRIVATE")
		}
		if body == "" || len(body) > 76 || runOf(body, 0, b64Std) != len(body) {
			return false
		}
		rest = next
	}
	return false
}

// dataURILine: the line ends in a data: URI's base64 payload, 40
// characters or more, which the next line goes on with.
func dataURILine(line string) bool {
	k := strings.LastIndex(line, ";base64,")
	return k >= 0 && len(line)-k-8 >= 40 && runOf(line, k+8, b64Std) == len(line)
}

// hunkHeader: a unified diff's "@@ -a,b +c,d @@ ", which the line the
// hunk starts after follows (a line of the same base64 block).
func hunkHeader(pre string) bool {
	return strings.HasPrefix(pre, "@@ -") && strings.HasSuffix(pre, " @@ ")
}

// lineBody is a line without its diff marker ("+", "-" or " " of a
// unified diff) and indentation.
func lineBody(line string) string {
	if line != "" && (line[0] == '+' || line[0] == '-' || line[0] == ' ') {
		line = line[1:]
	}
	return strings.TrimLeft(line, " \t")
}

// base64Text: the token is base64 (either alphabet) of text, 90% of its
// bytes printable ASCII (a line cut from an encoded file ends mid-rune):
// encoded text, which the decoder scans, not a key. Random bytes are
// printable ASCII about a third of the time.
func base64Text(t string) bool {
	t = strings.TrimRight(t, "=")
	t = t[:len(t)/4*4]
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
		d, err := enc.DecodeString(t)
		if err != nil || len(d) < 8 {
			continue
		}
		n := 0
		for _, c := range d {
			if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
				n++
			}
		}
		if n*10 >= len(d)*9 {
			return true
		}
	}
	return false
}
