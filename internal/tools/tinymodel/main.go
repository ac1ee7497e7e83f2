// Command tinymodel writes the tiny steered GGUF model of the artagent
// integration tests, and a Modelfile per kind, into a directory:
//
//	go run ./internal/tools/tinymodel -dir /tmp/tiny [-num-ctx 2048]
//	ollama create art-tiny -f /tmp/tiny/Modelfile.valid
//
// See internal/tinymodel for what the model replies.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/art-runtime/art/internal/tinymodel"
)

func main() {
	dir := flag.String("dir", ".", "directory to write tiny.gguf and Modelfile.KIND into")
	numCtx := flag.Int("num-ctx", 2048, "the context the Modelfiles ask Ollama to serve (0: its default)")
	flag.Parse()
	if err := write(*dir, *numCtx); err != nil {
		fmt.Fprintln(os.Stderr, "tinymodel:", err)
		os.Exit(1)
	}
}

func write(dir string, numCtx int) error {
	path := filepath.Join(dir, "tiny.gguf")
	if err := tinymodel.WriteFile(path); err != nil {
		return err
	}
	for _, k := range tinymodel.Kinds {
		mf := filepath.Join(dir, "Modelfile."+string(k))
		if err := os.WriteFile(mf, []byte(tinymodel.Modelfile("./tiny.gguf", k, numCtx)), 0o644); err != nil {
			return err
		}
		fmt.Println(mf)
	}
	return nil
}
