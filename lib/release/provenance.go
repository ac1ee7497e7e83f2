package release

import (
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
	ResolvedDependencies []ResourceDescriptor `json:"resolvedDependencies"`
}

// ExternalParameters are the inputs a verifier should check: the commit,
// the tag that named the version, and the contract.
type ExternalParameters struct {
	Commit         string `json:"commit"`
	Tag            string `json:"tag,omitempty"`
	Version        string `json:"version"`
	ContractSHA256 string `json:"contractSHA256"`
}

// ResourceDescriptor is an in-toto v1 resource descriptor.
type ResourceDescriptor struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
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
func buildProvenance(id *Identity, contractSHA string, artifacts []Artifact) ([]byte, error) {
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
	for _, a := range artifacts {
		st.Subject = append(st.Subject, Subject{Name: a.Name, Digest: map[string]string{"sha256": a.SHA256}})
	}
	return jsonx.MarshalIndent(st)
}
