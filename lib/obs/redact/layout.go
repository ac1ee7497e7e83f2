package redact

import "strings"

// Provider layouts: ids and keys some providers issue without a prefix of
// their own, recognisable bare only by a fixed layout that hashes, ids and
// words do not take (gitleaks finds them only after the provider's name).
// Each is taken standing alone (start or end of text, space, quote,
// bracket, ',', ';', '=' around it) or as a URL's user name, measured on the real-text and
// source-code sets of scripts/redact-report.sh:
//
//   - Sumo Logic access ids: "su" and 12 letters and digits holding upper
//     and lower case, a digit and two capitals side by side, few of its
//     letter pairs common in English and no written word (camelCase
//     names such as superMan1Loves and subXMLParser2x stay);
//   - Sidekiq Pro and Enterprise licence credentials: 8 lower-case hex
//     digits, ':', 8 more, each half holding letters and digits, not in a
//     longer chain of ':'-joined hex groups (IPv6, dumps); the credential
//     is the user:password of the gem server's URL and is written alone in
//     BUNDLE_ENTERPRISE__CONTRIBSYS__COM and Gemfile configs;
//   - Mailgun API and signing keys: 32 lower-case hex digits (letters and
//     digits both), '-', 8, '-', 8 (gitleaks' mailgun-signing-key).
//
// Bare hex and UUIDs in general stay (git hashes, request ids): these
// layouts are the provider's, not hex of any length.

// layoutToken returns the end of the provider layout the token s[a:b]
// (a run of letters, digits, '_' and '-') starts, or 0.
func layoutToken(s string, a, b int) int {
	// A URL's user name (https://ID@host) stands alone too.
	user := a >= 3 && s[a-3:a] == "://"
	if !user && !standsAlone(s, a, true) {
		return 0
	}
	ends := func(i int) bool { return standsAlone(s, i, false) || user && i < len(s) && s[i] == '@' }
	t := s[a:b]
	switch {
	case len(t) == 14 && t[0] == 's' && t[1] == 'u' && sumoID(t[2:]) && ends(b):
		return b
	case len(t) == 50 && t[32] == '-' && t[41] == '-' && lowerHexMixed(t[:32]) && isLowerHex(t[33:41]) && isLowerHex(t[42:]) && ends(b):
		return b
	case len(t) == 8 && b+9 <= len(s) && s[b] == ':' && lowerHexMixed(t) && lowerHexMixed(s[b+1:b+9]) &&
		(a == 0 || s[a-1] != ':') && ends(b+9):
		return b + 9
	}
	return 0
}

// standsAlone: the byte before i (before) or at i (after) bounds a value.
func standsAlone(s string, i int, before bool) bool {
	if before {
		return i == 0 || strings.IndexByte(" \t\r\n\"'`([{<,;=", s[i-1]) >= 0
	}
	return i == len(s) || strings.IndexByte(" \t\r\n\"'`)]}>,;", s[i]) >= 0 || s[i] == '.' && (i+1 == len(s) || isSpace(s[i+1]))
}

// sumoID: 12 letters and digits, both cases and a digit among them, two
// capitals side by side (a camelCase name has them only in an acronym:
// superMan1Loves), at most 35% of its letter pairs (and one more) common
// in English and no written word in it.
func sumoID(t string) bool {
	n, _ := classCounts(t)
	pairs, common := letterPairs(t)
	return n[3] == 0 && n[0] > 0 && n[1] > 0 && n[2] > 0 && upperPairs(t) > 0 && float64(common) <= randomWordy*float64(pairs)+1 &&
		!writtenWord(t)
}

// writtenWord: t holds a word of four letters or more, a capital and
// lower-case letters or lower-case alone, three quarters of whose letter
// pairs are common in English (subXMLParser2x: "Parser").
func writtenWord(t string) bool {
	for i := 0; i < len(t); {
		j := i
		if isUpper(t[j]) {
			j++
		}
		for j < len(t) && isLower(t[j]) {
			j++
		}
		if j-i >= 4 {
			pairs, common := letterPairs(t[i:j])
			if common*4 >= pairs*3 {
				return true
			}
		}
		i = max(j, i+1)
	}
	return false
}

// lowerHexMixed: lower-case hex holding both letters and digits.
func lowerHexMixed(t string) bool {
	n, _ := classCounts(t)
	return isLowerHex(t) && n[0] > 0 && n[2] > 0
}

func isLowerHex(t string) bool {
	for i := 0; i < len(t); i++ {
		if !isDigit(t[i]) && (t[i] < 'a' || t[i] > 'f') {
			return false
		}
	}
	return t != ""
}
