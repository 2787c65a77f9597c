// Command openapi writes the Engine's API document (generated from every
// route table, api/openapi.go) to docs/openapi.json; `make generate` runs
// it and `make check-generated` fails when the committed copy is stale.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/cairn-rmm/cairn/engine"
)

func main() {
	out := flag.String("o", "docs/openapi.json", "where to write the document")
	flag.Parse()
	b, err := engine.DocumentJSON()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
}
