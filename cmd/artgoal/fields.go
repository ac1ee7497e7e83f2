package main

import "github.com/art-runtime/art/internal/cli"

// The library fields artgoal's flags set, for wording the libraries'
// errors and hints in flags (cli.Flags).
var (
	// revFields: the revision a change is based on (goal.RevisionError's hint).
	revFields = cli.Flags{"Rev": "--rev"}
	// sourceFields: where task evidence is read (file.Location as
	// lib/evidence fills it).
	sourceFields = cli.Flags{"Queue": "--queue", "Dir": "--queue-dir"}
)

// FieldFlags implements cli.FieldFlagger.
func (*SourceFlags) FieldFlags() cli.Flags { return sourceFields }

// FieldFlags implements cli.FieldFlagger.
func (*CheckCmd) FieldFlags() cli.Flags { return sourceFields.With(revFields) }

// FieldFlags implements cli.FieldFlagger.
func (*PutCmd) FieldFlags() cli.Flags { return sourceFields.With(revFields) }

// FieldFlags implements cli.FieldFlagger.
func (*ReceiptCmd) FieldFlags() cli.Flags { return sourceFields.With(revFields) }

// FieldFlags implements cli.FieldFlagger.
func (*CloseCmd) FieldFlags() cli.Flags { return revFields }
