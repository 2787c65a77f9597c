// Package web embeds the built console (web/dist, produced by `npm run
// build`). A fresh clone has only dist/.gitkeep, so the Engine still builds;
// it then says how to build the console.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Console returns the built console's files.
func Console() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err)
	}
	return sub
}
