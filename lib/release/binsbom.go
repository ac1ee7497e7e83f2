package release

import (
	"debug/buildinfo"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
)

// spdxGoSumRefType is the external reference type carrying a go.sum "h1:"
// hash. SPDX 2.3 lists no checksum algorithm for it: h1 is the SHA-256 of
// the golang.org/x/mod/sumdb/dirhash summary (a list of file hashes), not
// of any file a reader could hash, so a SHA256 checksum would claim a
// digest of something that does not exist. An OTHER external reference
// (SPDX 2.3 §7.21, Annex F: any type without spaces) states it as what it
// is; `go mod verify` and the checksum database check it.
const spdxGoSumRefType = "go-sum-h1"

func goSumRef(h1 string) SPDXExternalRef {
	return SPDXExternalRef{ReferenceCategory: "OTHER", ReferenceType: spdxGoSumRefType, ReferenceLocator: h1}
}

// binarySBOMName is BIN_VERSION_OS_ARCH.spdx.json.
func binarySBOMName(bin, version string, p Platform) string {
	return bin + "_" + version + "_" + p.Suffix() + ".spdx.json"
}

// binarySBOMInput is what a binary's SBOM is a function of: the binary
// (its embedded build information and its digest) and the release.
type binarySBOMInput struct {
	Contract *Contract
	ID       *Identity
	Binary   string // the program's name
	Platform Platform
	SHA256   string // of the binary
	Info     *debug.BuildInfo
	// Licenses maps "path@version" to the detected licence (licenses.go);
	// absent or "": NOASSERTION.
	Licenses map[string]string
}

// readBuildInfo reads the module list and build settings the go command
// embedded in a binary.
func readBuildInfo(path string) (*debug.BuildInfo, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("binary %s: no Go build information: %w", path, err)
	}
	return bi, nil
}

// buildBinarySBOM describes one binary by what it links: the Go build
// information embedded in it (debug/buildinfo) — the main module, every
// module whose packages were linked (not every go.mod requirement), after
// replacements, with go.sum's h1 hash as a go-sum-h1 reference; the
// standard library at the toolchain's version; the build settings. The
// binary STATIC_LINKs each module (SPDX 2.3's relationship for a
// statically linked dependency). Like the source SBOM it holds nothing of
// the machine: created is the commit time and the namespace is derived
// from the content.
func buildBinarySBOM(in binarySBOMInput) ([]byte, error) {
	c, id, bi := in.Contract, in.ID, in.Info
	org := c.Supplier
	if org == "" && c.Module != "" {
		org = supplierOf(c.Module)
	}
	binID := "SPDXRef-Package-binary-" + spdxIDPart(in.Binary)
	var settings []string
	for _, s := range bi.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	bin := SPDXPackage{
		SPDXID:                binID,
		Name:                  in.Binary,
		VersionInfo:           id.Version,
		Supplier:              spdxOrganization(org),
		PackageFileName:       in.Binary + in.Platform.Exe(),
		DownloadLocation:      spdxNoAssertion,
		FilesAnalyzed:         false,
		Checksums:             []SPDXChecksum{{Algorithm: "SHA256", ChecksumValue: in.SHA256}},
		LicenseConcluded:      spdxNoAssertion,
		LicenseDeclared:       c.License,
		CopyrightText:         spdxNoAssertion,
		PrimaryPackagePurpose: "APPLICATION",
		SourceInfo:            sourceInfo(id),
		Comment: "built for " + in.Platform.String() + " by " + bi.GoVersion + " from package " + bi.Path +
			"; build settings: " + strings.Join(settings, " "),
	}
	doc := SPDXDocument{
		SPDXVersion: SPDXVersion,
		DataLicense: spdxDataLicense,
		SPDXID:      spdxDocumentID,
		Name:        in.Binary + "-" + id.Version + "-" + in.Platform.Suffix(),
		CreationInfo: SPDXCreationInfo{
			Created:  id.Time().Format(spdxTime),
			Creators: creators(org),
			Comment: "Modules: the Go build information embedded in the binary (debug/buildinfo): the modules it links, after replace directives. " +
				"A module's go.sum h1 hash is an OTHER external reference of type " + spdxGoSumRefType + " (it hashes the dirhash summary, not a file, so it is no SPDX checksum). " +
				"Licences: " + licenseRule,
		},
		Packages: []SPDXPackage{bin},
		Relationships: []SPDXRelationship{
			{SPDXElementID: spdxDocumentID, RelationshipType: "DESCRIBES", RelatedSPDXElement: binID},
		},
	}
	// The main module is the release's source at this commit: the go
	// command records "(devel)" for it (no VCS stamping), so its version is
	// the release's Go version.
	mainVersion := id.GoVersion
	if mainVersion == "" {
		mainVersion = "v" + id.Version
	}
	mods := []SPDXPackage{{
		SPDXID:                "SPDXRef-Package-main-" + spdxIDPart(bi.Main.Path),
		Name:                  bi.Main.Path,
		VersionInfo:           mainVersion,
		Supplier:              spdxOrganization(org),
		DownloadLocation:      spdxNoAssertion,
		LicenseConcluded:      spdxNoAssertion,
		LicenseDeclared:       c.License,
		CopyrightText:         spdxNoAssertion,
		PrimaryPackagePurpose: "LIBRARY",
		Comment:               "the main module, built from the release's source archive (the binary records version " + bi.Main.Version + ")",
		ExternalRefs:          []SPDXExternalRef{purlRef(bi.Main.Path, mainVersion)},
	}}
	std := strings.TrimPrefix(bi.GoVersion, "go")
	mods = append(mods, SPDXPackage{
		SPDXID:                "SPDXRef-Package-stdlib",
		Name:                  "stdlib",
		VersionInfo:           bi.GoVersion,
		Supplier:              spdxOrganization("golang.org"),
		DownloadLocation:      spdxNoAssertion,
		LicenseConcluded:      spdxNoAssertion,
		LicenseDeclared:       spdxNoAssertion,
		CopyrightText:         spdxNoAssertion,
		PrimaryPackagePurpose: "LIBRARY",
		Comment:               "the Go standard library and runtime of the toolchain",
		ExternalRefs:          []SPDXExternalRef{purlRef("stdlib", "v"+std)},
	})
	deps := append([]*debug.Module(nil), bi.Deps...)
	sort.Slice(deps, func(i, j int) bool {
		if deps[i].Path != deps[j].Path {
			return deps[i].Path < deps[j].Path
		}
		return deps[i].Version < deps[j].Version
	})
	used := map[string]int{}
	for _, d := range deps {
		m := GoModule{Path: d.Path, Version: d.Version, H1: d.Sum}
		if r := d.Replace; r != nil {
			m.Replaces = d.Path + "@" + d.Version
			m.Path, m.Version, m.H1 = r.Path, r.Version, r.Sum
			if r.Version == "" {
				m.LocalDir = r.Path
			}
		}
		pkg, err := modulePackage(m, used)
		if err != nil {
			return nil, err
		}
		if l, ok := in.Licenses[m.Path+"@"+m.Version]; ok && l != "" {
			pkg.LicenseDeclared, pkg.LicenseConcluded = l, l
		}
		mods = append(mods, pkg)
	}
	for _, p := range mods {
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, SPDXRelationship{SPDXElementID: binID, RelationshipType: "STATIC_LINK", RelatedSPDXElement: p.SPDXID})
	}
	return encodeSBOM(doc)
}

// moduleLicenses detects the licence of every module a binary links, from
// the module cache; missing lists the modules not found there.
func moduleLicenses(modCache string, bi *debug.BuildInfo) (licenses map[string]string, missing []string) {
	licenses = map[string]string{}
	for _, d := range bi.Deps {
		path, version := d.Path, d.Version
		if d.Replace != nil {
			path, version = d.Replace.Path, d.Replace.Version
		}
		l, ok := detectLicense(modCache, path, version)
		if !ok {
			missing = append(missing, path+"@"+version)
		}
		licenses[path+"@"+version] = l
	}
	return licenses, missing
}
