package release

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/art-runtime/art/lib/jsonx"
)

// SPDX constants of the SBOM.
const (
	SPDXVersion     = "SPDX-2.3"
	spdxDataLicense = "CC0-1.0"
	spdxDocumentID  = "SPDXRef-DOCUMENT"
	spdxSourceID    = "SPDXRef-Package-source"
	spdxNoAssertion = "NOASSERTION"
	// spdxCreator names the tool without its version: the SBOM must be the
	// same whichever build of artrelease wrote it.
	spdxCreator       = "Tool: artrelease"
	spdxNamespaceBase = "https://spdx.org/spdxdocs/"
)

// SPDXDocument is the subset of SPDX 2.3 JSON the SBOM writes. Field order is
// the encoding order; every slice is sorted before encoding.
type SPDXDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      SPDXCreationInfo   `json:"creationInfo"`
	Packages          []SPDXPackage      `json:"packages"`
	Relationships     []SPDXRelationship `json:"relationships"`
}

// SPDXCreationInfo says when and by what the document was made.
type SPDXCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
	Comment  string   `json:"comment,omitempty"`
}

// SPDXPackage is the source package or one Go module.
type SPDXPackage struct {
	SPDXID                string            `json:"SPDXID"`
	Name                  string            `json:"name"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	PackageFileName       string            `json:"packageFileName,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []SPDXChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	SourceInfo            string            `json:"sourceInfo,omitempty"`
	Comment               string            `json:"comment,omitempty"`
	ExternalRefs          []SPDXExternalRef `json:"externalRefs,omitempty"`
}

// SPDXChecksum is one digest of a package.
type SPDXChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

// SPDXExternalRef is a package URL.
type SPDXExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

// SPDXRelationship links two elements.
type SPDXRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// sbomInput is everything the SBOM is a function of.
type sbomInput struct {
	Contract      *Contract
	ID            *Identity
	ArchiveName   string
	ArchiveSHA256 string
	// Modules are the Go modules of the tree (TreeModule), sorted by
	// directory; the root module, when there is one, first.
	Modules []TreeModule
	// Stray are the go.mod files of the tree that are no module (noted in
	// the source package's comment).
	Stray []StrayGoMod
}

// buildSBOM returns the SBOM's bytes. Nothing in it comes from the machine
// or the clock: created is the commit time, and documentNamespace ends in a
// UUIDv5 of the SHA-256 of the document written with an empty namespace, so
// equal content always gets the equal namespace and different content a
// different one.
//
// Packages: the source (the archive; it is the root module when the tree
// has a root go.mod), one package per nested module of the tree (the source
// CONTAINS it), and one per required module after replace directives,
// shared by every module requiring it. Each module of the tree DEPENDS_ON
// its own requirements; a requirement replaced by a directory holding a
// module of the tree is an edge to that module's package, which carries the
// replacing module's path and its version at this commit.
func buildSBOM(in sbomInput) ([]byte, error) {
	c, id := in.Contract, in.ID
	org := c.Supplier
	if org == "" && c.Module != "" {
		org = supplierOf(c.Module)
	}
	source := SPDXPackage{
		SPDXID:                spdxSourceID,
		Name:                  c.Name,
		VersionInfo:           id.Version,
		Supplier:              spdxOrganization(org),
		PackageFileName:       in.ArchiveName,
		DownloadLocation:      spdxNoAssertion,
		FilesAnalyzed:         false,
		Checksums:             []SPDXChecksum{{Algorithm: "SHA256", ChecksumValue: in.ArchiveSHA256}},
		LicenseConcluded:      spdxNoAssertion,
		LicenseDeclared:       c.License,
		CopyrightText:         spdxNoAssertion,
		PrimaryPackagePurpose: "SOURCE",
		SourceInfo:            sourceInfo(id),
	}
	if c.Module != "" {
		source.ExternalRefs = []SPDXExternalRef{purlRef(c.Module, id.GoVersion)}
	}
	source.Comment = strayComment(in.Stray)
	doc := SPDXDocument{
		SPDXVersion: SPDXVersion,
		DataLicense: spdxDataLicense,
		SPDXID:      spdxDocumentID,
		Name:        c.Name + "-" + id.Version,
		CreationInfo: SPDXCreationInfo{
			Created:  id.Time().Format(spdxTime),
			Creators: creators(org),
		},
		Packages: []SPDXPackage{source},
		Relationships: []SPDXRelationship{
			{SPDXElementID: spdxDocumentID, RelationshipType: "DESCRIBES", RelatedSPDXElement: spdxSourceID},
		},
	}
	if len(in.Modules) == 0 {
		return encodeSBOM(doc)
	}
	doc.CreationInfo.Comment = "Go modules: every go.mod of the source archive (outside testdata, vendor and dot/underscore directories) and every go.work member is a package of its own, " +
		"depending on its go.mod requirements (direct and indirect) after replace directives; " +
		"a module's go.sum h1 hash is an OTHER external reference of type " + spdxGoSumRefType + " (it hashes the golang.org/x/mod/sumdb/dirhash summary, not a file, so it is no SPDX checksum)."

	// The tree's modules: the root is the source package itself.
	inTree := map[string]string{} // directory → SPDXID
	var rels []SPDXRelationship
	for _, tm := range in.Modules {
		if tm.Dir == "" {
			inTree[""] = spdxSourceID
			continue
		}
		pkg := SPDXPackage{
			SPDXID:                "SPDXRef-Package-module-" + spdxIDPart(tm.Dir),
			Name:                  tm.GoMod.Module,
			VersionInfo:           tm.Version,
			Supplier:              spdxOrganization(supplierOf(tm.GoMod.Module)),
			DownloadLocation:      spdxNoAssertion,
			FilesAnalyzed:         false,
			LicenseConcluded:      spdxNoAssertion,
			LicenseDeclared:       spdxNoAssertion,
			CopyrightText:         spdxNoAssertion,
			PrimaryPackagePurpose: "LIBRARY",
			Comment:               "Go module in the directory " + tm.Dir + " of the source archive",
			ExternalRefs:          []SPDXExternalRef{purlRef(tm.GoMod.Module, tm.Version)},
		}
		if tm.WorkMember {
			pkg.Comment += "; a go.work member"
		}
		inTree[tm.Dir] = pkg.SPDXID
		doc.Packages = append(doc.Packages, pkg)
		rels = append(rels, SPDXRelationship{SPDXElementID: spdxSourceID, RelationshipType: "CONTAINS", RelatedSPDXElement: pkg.SPDXID})
	}
	if len(in.Modules) > 0 && in.Modules[0].Dir == "" && in.Modules[0].WorkMember {
		doc.Packages[0].Comment = joinNotes("the root Go module; a go.work member", doc.Packages[0].Comment)
	}

	// Required modules, one package per module version, shared.
	deps := map[string]GoModule{}
	type edge struct{ from, key string }
	var edges []edge
	for _, tm := range in.Modules {
		from := inTree[tm.Dir]
		for _, m := range tm.GoMod.Modules {
			if m.LocalDir != "" {
				target := path.Join(tm.Dir, m.LocalDir)
				if target == "." {
					target = ""
				}
				if tid, ok := inTree[target]; ok && !strings.HasPrefix(target, "../") {
					if tid != from {
						edges = append(edges, edge{from, "tree:" + tid})
					}
					continue
				}
				m.LocalDir = target // name it from the root, as it is in the archive
			}
			key := m.Path + "@" + m.Version + "\x00" + m.LocalDir
			if old, ok := deps[key]; ok {
				// The same module version from two go.mod files: one package;
				// keep what either knows (a checksum, the "indirect" note only
				// when every requirer says so).
				if old.H1 == "" {
					old.H1 = m.H1
				}
				old.Indirect = old.Indirect && m.Indirect
				if old.Replaces == "" {
					old.Replaces = m.Replaces
				}
				deps[key] = old
			} else {
				deps[key] = m
			}
			edges = append(edges, edge{from, key})
		}
	}
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := deps[keys[i]], deps[keys[j]]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.LocalDir < b.LocalDir
	})
	used := map[string]int{}
	for _, id := range inTree {
		used[id]++
	}
	ids := map[string]string{}
	for _, k := range keys {
		pkg, err := modulePackage(deps[k], used)
		if err != nil {
			return nil, err
		}
		ids[k] = pkg.SPDXID
		doc.Packages = append(doc.Packages, pkg)
	}
	seen := map[edge]bool{}
	for _, e := range edges {
		if seen[e] {
			continue
		}
		seen[e] = true
		to := ids[e.key]
		if t, ok := strings.CutPrefix(e.key, "tree:"); ok {
			to = t
		}
		rels = append(rels, SPDXRelationship{SPDXElementID: e.from, RelationshipType: "DEPENDS_ON", RelatedSPDXElement: to})
	}
	doc.Relationships = append(doc.Relationships, rels...)
	return encodeSBOM(doc)
}

// spdxTime is SPDX's date format: UTC, seconds, a Z.
const spdxTime = "2006-01-02T15:04:05Z"

// encodeSBOM fixes the namespace from the content and encodes the document.
func encodeSBOM(doc SPDXDocument) ([]byte, error) {
	ns, err := sbomNamespace(doc)
	if err != nil {
		return nil, err
	}
	doc.DocumentNamespace = ns
	return jsonx.MarshalIndent(doc)
}

// sbomNamespace is the namespace a document's content earns.
func sbomNamespace(doc SPDXDocument) (string, error) {
	doc.DocumentNamespace = ""
	b, err := jsonx.MarshalIndent(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return spdxNamespaceBase + doc.Name + "-" + uuidV5(uuidNamespaceURL, "sha256:"+hex.EncodeToString(sum[:])), nil
}

// supplierOf derives a Go module's supplier from its path: the host and
// owner (github.com/art-runtime for github.com/art-runtime/art/v2,
// golang.org/x for golang.org/x/mod), or the host alone for a two-element
// path (go.uber.org for go.uber.org/goleak). It names the namespace the
// module is published under — who controls that path — not a legal
// entity; docs/artrelease.md says so.
func supplierOf(modPath string) string {
	el := strings.Split(modPath, "/")
	if len(el) >= 3 {
		return el[0] + "/" + el[1]
	}
	return el[0]
}

// spdxOrganization is an SPDX supplier or creator field, NOASSERTION when
// no organization is known.
func spdxOrganization(org string) string {
	if org == "" {
		return spdxNoAssertion
	}
	return "Organization: " + org
}

// creators are the tool and, when known, the publishing organization:
// NTIA's SBOM author is who publishes the SBOM, not only what wrote it.
func creators(org string) []string {
	if org == "" {
		return []string{spdxCreator}
	}
	return []string{"Organization: " + org, spdxCreator}
}

// strayComment notes the go.mod files that are not modules of the release.
func strayComment(stray []StrayGoMod) string {
	var notes []string
	for _, s := range stray {
		notes = append(notes, s.Path+" "+s.Reason)
	}
	if len(notes) == 0 {
		return ""
	}
	return "not Go modules (the go command would not load them): " + strings.Join(notes, "; ")
}

func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

func sourceInfo(id *Identity) string {
	s := "built from git commit " + id.Commit.ID + " (tree " + id.Commit.Tree + ")"
	if id.Tag != "" {
		s += " tagged " + id.Tag
	}
	return s
}

func modulePackage(m GoModule, used map[string]int) (SPDXPackage, error) {
	pkg := SPDXPackage{
		Name:                  m.Path,
		VersionInfo:           m.Version,
		Supplier:              spdxOrganization(supplierOf(m.Path)),
		DownloadLocation:      spdxNoAssertion,
		FilesAnalyzed:         false,
		LicenseConcluded:      spdxNoAssertion,
		LicenseDeclared:       spdxNoAssertion,
		CopyrightText:         spdxNoAssertion,
		PrimaryPackagePurpose: "LIBRARY",
	}
	var notes []string
	if m.Indirect {
		notes = append(notes, "indirect requirement")
	}
	if m.Replaces != "" {
		notes = append(notes, "replaces "+m.Replaces)
	}
	if m.LocalDir != "" {
		notes = append(notes, "replaced by the directory "+m.LocalDir+", which holds no module of the source archive: no version")
	} else {
		pkg.ExternalRefs = []SPDXExternalRef{purlRef(m.Path, m.Version)}
	}
	if m.H1 != "" {
		if _, err := h1Hex(m.H1); err != nil {
			return pkg, fmt.Errorf("go.sum %s@%s: %w", m.Path, m.Version, err)
		}
		pkg.ExternalRefs = append(pkg.ExternalRefs, goSumRef(m.H1))
	} else if m.LocalDir == "" {
		notes = append(notes, "no go.sum hash for the module's content")
	}
	pkg.Comment = strings.Join(notes, "; ")
	base := "SPDXRef-Package-go-" + spdxIDPart(m.Path)
	if m.Version != "" {
		base += "-" + spdxIDPart(m.Version)
	}
	// Different paths can sanitise to one id (a/b, a-b); modules arrive
	// sorted, so numbering the later ones is deterministic.
	used[base]++
	pkg.SPDXID = base
	if n := used[base]; n > 1 {
		pkg.SPDXID = fmt.Sprintf("%s-%d", base, n)
	}
	return pkg, nil
}

// spdxIDPart keeps the characters an SPDX identifier allows (letters,
// digits, '.', '-') and turns the rest into '-'.
func spdxIDPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

func purlRef(path, version string) SPDXExternalRef {
	return SPDXExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: Purl(path, version)}
}

// Purl is the package URL of a Go module version: pkg:golang/PATH@VERSION.
// The module path keeps its case (github.com/Azure/… is not
// github.com/azure/… to the go command), each path segment and the version
// are percent-encoded as the purl spec asks ("+incompatible" → "%2Bincompatible").
func Purl(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = purlEscape(s)
	}
	p := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		p += "@" + purlEscape(version)
	}
	return p
}

func purlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// uuidNamespaceURL is RFC 9562's namespace for URLs, 6ba7b811-9dad-11d1-80b4-00c04fd430c8.
var uuidNamespaceURL = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// uuidV5 is RFC 9562 §5.5: SHA-1 of namespace||name, version 5, variant 10.
func uuidV5(ns [16]byte, name string) string {
	h := sha1.New()
	h.Write(ns[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// commitTime formats a manifest time: RFC 3339 UTC.
func commitTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
