package main

import (
	"fmt"
	"os"

	"github.com/art-runtime/art/internal/cli"
	"github.com/art-runtime/art/lib/release"
)

// contractFields: the contract file a release is built or checked under
// (release's ContractFile options).
var contractFields = cli.Flags{"ContractFile": "--contract"}

// FieldFlags implements cli.FieldFlagger: release.BuildOptions.
func (*BuildCmd) FieldFlags() cli.Flags {
	return contractFields.With(cli.Flags{"Ref": "--ref", "Out": "--out", "Force": "--force"})
}

// FieldFlags implements cli.FieldFlagger.
func (*CheckCmd) FieldFlags() cli.Flags { return contractFields.With(cli.Flags{"Ref": "--ref"}) }

// FieldFlags implements cli.FieldFlagger.
func (*VerifyCmd) FieldFlags() cli.Flags { return contractFields.With(cli.Flags{"Repo": "--repo"}) }

// FieldFlags implements cli.FieldFlagger: release.VerifyTagOptions.
func (*VerifyTagCmd) FieldFlags() cli.Flags { return contractFields.With(cli.Flags{"Main": "--main"}) }

// inputs checks the --repo and --contract paths a command was given before
// the library reads them, so a missing one is named by its flag (exit 4).
func inputs(repo, contract string) error {
	for _, in := range []struct{ flag, path string }{{"--repo", repo}, {"--contract", contract}} {
		if in.path == "" {
			continue
		}
		if _, err := os.Stat(in.path); err != nil {
			return fmt.Errorf("%s %s: %w: %w", in.flag, in.path, release.ErrNotFound, err)
		}
	}
	return nil
}
