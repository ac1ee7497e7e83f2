// Package netproxy is art's egress proxy: the only way out of a task that
// runs with network allow. It speaks HTTP CONNECT and plain-HTTP
// forwarding, checks every destination against an allowlist of names and
// ports, resolves names itself, refuses addresses a name should never
// lead to (loopback, link-local, private ranges) unless that address is
// listed, never follows a redirect, bounds the connections and bytes of
// one task and accounts for every decision.
//
// It runs in the runner, outside the task's namespaces; the task reaches
// it only through a listener in its own network namespace (docs/artexec.md:
// Network).
package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the port of a rule that names none.
const DefaultPort = 443

// Rule is one allowlist entry: a name (exact, or every name beneath
// Suffix), or an address, and one port.
type Rule struct {
	Host   string     // lower case, no trailing dot; for Suffix the part after "*."
	Suffix bool       // "*.example.com": every name ending in ".example.com", not example.com itself
	Addr   netip.Addr // an address rule ("127.0.0.1", "[::1]:8080")
	Port   int
}

func (r Rule) String() string {
	host := r.Host
	switch {
	case r.Addr.IsValid():
		host = r.Addr.String()
		if r.Addr.Is6() {
			host = "[" + host + "]"
		}
	case r.Suffix:
		host = "*." + host
	}
	return host + ":" + strconv.Itoa(r.Port)
}

// ParseRule parses HOST[:PORT], *.SUFFIX[:PORT], IPV4[:PORT] or
// [IPV6][:PORT]; the port is DefaultPort when none is given.
func ParseRule(s string) (Rule, error) {
	if s == "" {
		return Rule{}, errors.New("empty destination")
	}
	host, port, err := splitHostPort(s, DefaultPort)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Port: port}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return Rule{}, fmt.Errorf("%q: an address with a zone cannot be listed", s)
		}
		r.Addr = a.Unmap()
		return r, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		r.Suffix, host = true, rest
	}
	name, err := normName(host)
	if err != nil {
		return Rule{}, fmt.Errorf("%q: %v", s, err)
	}
	if r.Suffix && !strings.Contains(name, ".") {
		return Rule{}, fmt.Errorf("%q: a wildcard needs a suffix of two labels or more", s)
	}
	r.Host = name
	return r, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port".
func splitHostPort(s string, defPort int) (string, int, error) {
	host, portStr := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%q: missing ]", s)
		}
		host, rest := s[1:end], s[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return "", 0, fmt.Errorf("%q: want [ADDRESS]:PORT", s)
			}
			portStr = p
		}
		if _, err := netip.ParseAddr(host); err != nil {
			return "", 0, fmt.Errorf("%q: %q is not an IPv6 address", s, host)
		}
		p, err := portOr(portStr, defPort, s)
		return host, p, err
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		if strings.Count(s, ":") > 1 {
			return "", 0, fmt.Errorf("%q: write an IPv6 address in brackets", s)
		}
		host, portStr = s[:i], s[i+1:]
		if portStr == "" {
			return "", 0, fmt.Errorf("%q: empty port", s)
		}
	}
	p, err := portOr(portStr, defPort, s)
	return host, p, err
}

func portOr(s string, def int, whole string) (int, error) {
	if s == "" {
		return def, nil
	}
	p, err := strconv.Atoi(s)
	if err != nil || p < 1 || p > 65535 || s[0] == '+' || s[0] == '0' {
		return 0, fmt.Errorf("%q: port %q is not a number from 1 to 65535", whole, s)
	}
	return p, nil
}

// normName lower-cases a DNS name, drops one trailing dot and checks it
// is made of letters, digits, '-' and '_' in labels of 1 to 63 bytes.
func normName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", errors.New("not a host name")
	}
	if last := s[strings.LastIndexByte(s, '.')+1:]; strings.Trim(last, "0123456789") == "" {
		// "127.1", "0.0.0.0.": an address in some resolver's eyes (inet_aton
		// reads such forms), never a name; addresses are listed as such.
		return "", errors.New("not a host name (a numeric last label reads as an address)")
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("not a host name (empty or long label)")
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("not a host name (byte %q)", c)
			}
		}
	}
	return s, nil
}

// matchName reports whether name (normalised) and port are allowed by r.
func (r Rule) matchName(name string, port int) bool {
	if r.Port != port || r.Addr.IsValid() {
		return false
	}
	if r.Suffix {
		return strings.HasSuffix(name, "."+r.Host)
	}
	return name == r.Host
}

// matchAddr reports whether r lists address a on port.
func (r Rule) matchAddr(a netip.Addr, port int) bool {
	return r.Addr.IsValid() && r.Port == port && r.Addr == a.Unmap()
}

// Covered reports whether every destination r allows is allowed by one
// of rules: how a narrowing's destinations are checked against a policy's.
func Covered(r Rule, rules []Rule) bool {
	for _, o := range rules {
		switch {
		case o.Port != r.Port:
		case r.Addr.IsValid():
			if o.matchAddr(r.Addr, r.Port) {
				return true
			}
		case r.Suffix:
			if o.Suffix && (r.Host == o.Host || strings.HasSuffix(r.Host, "."+o.Host)) {
				return true
			}
		case o.matchName(r.Host, r.Port):
			return true
		}
	}
	return false
}
