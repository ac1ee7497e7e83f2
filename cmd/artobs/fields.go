package main

import "github.com/art-runtime/art/internal/cli"

// FieldFlags implements cli.FieldFlagger: obs.WrapPreset's name.
func (*EmitCmd) FieldFlags() cli.Flags { return cli.Flags{"Wrap": "--wrap"} }
