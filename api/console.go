package api

import (
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/cairn-rmm/cairn"
)

// notFound answers unknown API paths with JSON, and everything else from
// the console: a file when it exists, else index.html so the console's own
// router handles the path (SPA fallback).
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" || strings.HasPrefix(r.URL.Path, "/v1/") {
		writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeNotFound, "no such route: %s %s", r.Method, r.URL.Path))
		return
	}
	if !safeMethod(r.Method) {
		writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	if s.Console == nil {
		http.Error(w, "console not available", http.StatusNotFound)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name != "" {
		if st, err := fs.Stat(s.Console, name); err == nil && !st.IsDir() {
			// Vite fingerprints assets: they can be cached for good.
			if strings.HasPrefix(name, "assets/") {
				w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			}
			http.ServeFileFS(w, r, s.Console, name)
			return
		}
	}
	index, err := fs.ReadFile(s.Console, "index.html")
	if errors.Is(err, fs.ErrNotExist) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("The console was not built into this binary. Build it with `make web` (or use `make run`).\n"))
		return
	} else if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(index)
}
