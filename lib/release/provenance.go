package release

import (
	"sort"

	"github.com/art-runtime/art/lib/jsonx"
)

// in-toto and SLSA identifiers.
const (
	InTotoStatementType = "https://in-toto.io/Statement/v1"
	SLSAProvenanceType  = "https://slsa.dev/provenance/v1"
	// ProvenanceBuildType documents what the external parameters mean.
	ProvenanceBuildType = "https://github.com/art-runtime/art/blob/main/docs/artrelease.md#provenance"
	// ProvenanceBuilderID names the builder. It is the same for every build
	// by artrelease; a publication job that signs the statement vouches for
	// where it ran.
	ProvenanceBuilderID = "https://github.com/art-runtime/art/cmd/artrelease"
)

// Statement is an unsigned in-toto Statement v1 carrying an SLSA provenance
// v1 predicate. It holds nothing that varies between two builds of one
// commit (no start time, no invocation id, no host), so it is as
// reproducible as the artifacts it names.
type Statement struct {
	Type          string     `json:"_type"`
	Subject       []Subject  `json:"subject"`
	PredicateType string     `json:"predicateType"`
	Predicate     Provenance `json:"predicate"`
}

// Subject is one artifact and its digest.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Provenance is the SLSA v1 predicate.
type Provenance struct {
	BuildDefinition BuildDefinition `json:"buildDefinition"`
	RunDetails      RunDetails      `json:"runDetails"`
}

// BuildDefinition says what was built from what.
type BuildDefinition struct {
	BuildType            string               `json:"buildType"`
	ExternalParameters   ExternalParameters   `json:"externalParameters"`
	InternalParameters   *InternalParameters  `json:"internalParameters,omitempty"`
	ResolvedDependencies []ResourceDescriptor `json:"resolvedDependencies"`
}

// ExternalParameters are the inputs a verifier should check: the commit,
// the tag that named the version, and the contract.
type ExternalParameters struct {
	Commit         string `json:"commit"`
	Tag            string `json:"tag,omitempty"`
	Version        string `json:"version"`
	ContractSHA256 string `json:"contractSHA256"`
	// Binaries are the contract's binaries as built (none: a source-only
	// release).
	Binaries []Binary `json:"binaries,omitempty"`
}

// InternalParameters are what artrelease itself fixes for every binary
// build: the toolchain, the go build flags and environment (gobuild.go).
type InternalParameters struct {
	Toolchain  string   `json:"toolchain"`
	BuildFlags []string `json:"buildFlags"`
	Env        []string `json:"env"`
}

// binaryBuildFlags and binaryBuildEnv are the fixed part of every binary
// build (gobuild.go), as the provenance records them.
var (
	binaryBuildFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=<contract ldflags> -buildid="}
	binaryBuildEnv   = []string{"GOENV=off", "GOWORK=off", "GOFLAGS=-mod=readonly (-mod=vendor with vendor/modules.txt)", "CGO_ENABLED=0 (1 when the binary says cgo)", "GOOS, GOARCH and the variant from the platform", "LC_ALL=C", "TZ=UTC"}
)

// ResourceDescriptor is an in-toto v1 resource descriptor.
type ResourceDescriptor struct {
	Name   string            `json:"name"`
	URI    string            `json:"uri,omitempty"`
	Digest map[string]string `json:"digest,omitempty"`
}

// RunDetails names the builder.
type RunDetails struct {
	Builder Builder `json:"builder"`
}

// Builder identifies the build platform.
type Builder struct {
	ID string `json:"id"`
}

// buildProvenance makes the statement for artifacts (name, sha256 pairs in
// release order).
//
// Subjects are every artifact and, for a binary archive, each binary in it
// (named PLATFORM/FILE, linux_amd64/x), so a verifier holding one extracted
// binary can find its digest. With binaries, the toolchain is a resolved
// dependency and the internal parameters name the fixed build flags.
func buildProvenance(id *Identity, contractSHA string, c *Contract, goVersion string, artifacts []Artifact) ([]byte, error) {
	st := Statement{
		Type:          InTotoStatementType,
		PredicateType: SLSAProvenanceType,
		Predicate: Provenance{
			BuildDefinition: BuildDefinition{
				BuildType: ProvenanceBuildType,
				ExternalParameters: ExternalParameters{
					Commit:         id.Commit.ID,
					Tag:            id.Tag,
					Version:        id.Version,
					ContractSHA256: contractSHA,
				},
				ResolvedDependencies: []ResourceDescriptor{{
					Name:   "source",
					Digest: map[string]string{"gitCommit": id.Commit.ID, "gitTree": id.Commit.Tree},
				}},
			},
			RunDetails: RunDetails{Builder: Builder{ID: ProvenanceBuilderID}},
		},
	}
	st.Subject = provenanceSubjects(artifacts)
	if len(c.Binaries) > 0 {
		bd := &st.Predicate.BuildDefinition
		bd.ExternalParameters.Binaries = c.Binaries
		bd.InternalParameters = &InternalParameters{Toolchain: goVersion, BuildFlags: binaryBuildFlags, Env: binaryBuildEnv}
		bd.ResolvedDependencies = append(bd.ResolvedDependencies, ResourceDescriptor{Name: "toolchain", URI: "https://go.dev/dl/#" + goVersion})
	}
	return jsonx.MarshalIndent(st)
}

// provenanceSubjects are the artifacts and the binaries inside binary
// archives, sorted by name.
func provenanceSubjects(artifacts []Artifact) []Subject {
	var out []Subject
	for _, a := range artifacts {
		if a.Kind == ArtifactProvenance {
			continue
		}
		out = append(out, Subject{Name: a.Name, Digest: map[string]string{"sha256": a.SHA256}})
		if a.Kind != ArtifactBinaryArchive {
			continue
		}
		p, _ := ParsePlatform(a.Platform)
		for _, f := range a.Files {
			if f.Binary {
				out = append(out, Subject{Name: p.Suffix() + "/" + f.Name, Digest: map[string]string{"sha256": f.SHA256}})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
