package main

import "github.com/art-runtime/art/internal/cli"

// contractFields: the contract file a release is built or checked under
// (release's ContractFile options).
var contractFields = cli.Flags{"ContractFile": "--contract"}

// FieldFlags implements cli.FieldFlagger: release.BuildOptions.
func (*BuildCmd) FieldFlags() cli.Flags {
	return contractFields.With(cli.Flags{"Ref": "--ref", "Out": "--out", "Force": "--force"})
}

// FieldFlags implements cli.FieldFlagger.
func (*CheckCmd) FieldFlags() cli.Flags { return contractFields }

// FieldFlags implements cli.FieldFlagger.
func (*VerifyCmd) FieldFlags() cli.Flags { return contractFields }

// FieldFlags implements cli.FieldFlagger: release.VerifyTagOptions.
func (*VerifyTagCmd) FieldFlags() cli.Flags { return contractFields.With(cli.Flags{"Main": "--main"}) }
