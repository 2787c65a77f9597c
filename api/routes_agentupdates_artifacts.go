package api

// Agent artifacts and signed install links (docs/api.md "Agent artifacts
// and install links"): the update manifest, artifact downloads and hashes
// for enrolled agents, and the install download an installer reaches with
// a signed link only.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/installlinks"
)

// The downloads answer 416 (plain text, from http.ServeContent) to a range
// past the file's end.
func (s *agentUpdatesAPI) agentArtifactRoutes() []Route {
	return []Route{
		{"GET", "/api/agent/update/manifest", AuthDevice, getAction(s.Server, s.agentManifest).Query(queryString("platform", "the platform to describe (default: the inventory's)")).Errors(agentartifacts.ECodeUnavailable, cairn.ECodeAegisLocked), "Get the agent update manifest"},
		{"GET", "/api/agent/update/download/{artifact_id}", AuthDevice, raw(s.agentDownload).Stream(http.StatusOK, "application/octet-stream").AlsoStream(http.StatusPartialContent, "application/octet-stream").AlsoStream(http.StatusRequestedRangeNotSatisfiable, "text/plain").Errors(agentartifacts.ECodeUnavailable), "Download an agent artifact"},
		{"GET", "/api/agent/hash", AuthDevice, getAction(s.Server, s.agentHash).Query(queryString("platform", "the platform to describe (default: the inventory's)")).Errors(agentartifacts.ECodeUnavailable), "Get an agent artifact's hash"},
		{"GET", "/api/agent/hash_list", AuthDevice, getAction(s.Server, func(r *http.Request) (artifactListJSON, error) {
			out := []artifactJSON{}
			for _, a := range s.Artifacts.List() {
				out = append(out, newArtifactJSON(a))
			}
			return artifactListJSON{Artifacts: out}, nil
		}), "List agent artifacts and hashes"},
		{"GET", installlinks.PathPrefix + "{platform}", AuthSignedURL, raw(s.installDownload).Stream(http.StatusOK, "application/octet-stream").AlsoStream(http.StatusPartialContent, "application/octet-stream").AlsoStream(http.StatusRequestedRangeNotSatisfiable, "text/plain").Query(queryString("site_id", "the signed link's site"), queryString("artifact", "the signed link's artifact ID"), queryString("expires", "the signed link's expiry (Unix seconds)"), queryString("download_signature", "the signed link's signature")).Errors(installlinks.ECodeInvalid, agentartifacts.ECodeUnavailable, db.ECodeServiceUnavailable), "Download the agent installer (signed query link)"},
		{"GET", installlinks.PathPrefix + "{token}/{platform}", AuthSignedURL, raw(s.installDownload).Stream(http.StatusOK, "application/octet-stream").AlsoStream(http.StatusPartialContent, "application/octet-stream").AlsoStream(http.StatusRequestedRangeNotSatisfiable, "text/plain").Errors(installlinks.ECodeInvalid, agentartifacts.ECodeUnavailable, db.ECodeServiceUnavailable), "Download the agent installer (token link)"},
		{"POST", "/api/sites/{site_id}/agent-install-links/{platform}/revoke", AuthAdmin, jsonAction(s.Server, http.StatusOK, true,
			func(r *http.Request, _ struct{}) (installLinkJSON, error) {
				site, err := strconv.ParseInt(pathParam(r, "site_id"), 10, 64)
				if err != nil || site <= 0 {
					return installLinkJSON{}, cairn.Invalid("site_id", "must be a positive integer")
				}
				l, err := s.InstallLinks.Revoke(r.Context(), s.PublicURL, site, pathParam(r, "platform"), principal(r.Context()).Username)
				return newInstallLinkJSON(l), err
			}).Errors(cairn.ECodeNotFound), "Revoke a site's agent install link"},
	}
}

// artifactJSON is one artifact in hash_list.
type artifactJSON struct {
	Platform   string `json:"platform"`
	ArtifactID string `json:"artifact_id"`
	BuildID    string `json:"build_id"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
}

func newArtifactJSON(a agentartifacts.Artifact) artifactJSON {
	return artifactJSON{Platform: a.Platform, ArtifactID: a.ID, BuildID: a.BuildID, SHA256: a.SHA256, Size: a.Size}
}

// manifestJSON answers the manifest: the artifact, where to download it
// and the signature over ManifestPayload.
type manifestJSON struct {
	artifactJSON
	DownloadURL string       `json:"download_url"`
	Signature   proto.Signed `json:"signature"`
	// ArtifactSignature is the artifact key's (protocol 3 agents).
	ArtifactSignature *proto.Signed `json:"artifact_signature,omitempty"`
}

// devicePlatform is the platform an agent asks for (?platform=), else the
// one its inventory names.
func (s *agentUpdatesAPI) devicePlatform(r *http.Request) (string, error) {
	if p := r.URL.Query().Get("platform"); p != "" {
		if !agentartifacts.ValidPlatform(p) {
			return "", cairn.Invalid("platform", "must be "+strings.Join(agentartifacts.Platforms, " or "))
		}
		return p, nil
	}
	facts, err := s.Store.DevicePlatformFacts(r.Context(), deviceFrom(r.Context()).GUID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", cairn.Errorf(cairn.ECodeNotFound, "this device is not enrolled")
	} else if err != nil {
		return "", err
	}
	p := agentartifacts.PlatformOf(facts.OsFamily, facts.OsArch, facts.OperatingSystem)
	if p == "" {
		return "", cairn.Invalid("platform", "the device has not reported its system yet: pass ?platform=")
	}
	return p, nil
}

func (s *agentUpdatesAPI) agentManifest(r *http.Request) (manifestJSON, error) {
	p, err := s.devicePlatform(r)
	if err != nil {
		return manifestJSON{}, err
	}
	a, err := s.Artifacts.SignedCurrent(r.Context(), p)
	if err != nil {
		return manifestJSON{}, err
	}
	return manifestJSON{artifactJSON: newArtifactJSON(a), DownloadURL: "/api/agent/update/download/" + a.ID, Signature: a.Signature,
		ArtifactSignature: a.ArtifactSignature}, nil
}

// agentHashJSON names the build an agent of the platform should run.
type agentHashJSON struct {
	Platform string `json:"platform"`
	BuildID  string `json:"build_id"`
	SHA256   string `json:"sha256"`
}

func (s *agentUpdatesAPI) agentHash(r *http.Request) (agentHashJSON, error) {
	p, err := s.devicePlatform(r)
	if err != nil {
		return agentHashJSON{}, err
	}
	a, err := s.Artifacts.Current(p)
	if err != nil {
		return agentHashJSON{}, err
	}
	return agentHashJSON{Platform: a.Platform, BuildID: a.BuildID, SHA256: a.SHA256}, nil
}

func (s *agentUpdatesAPI) agentDownload(w http.ResponseWriter, r *http.Request) {
	f, a, err := s.Artifacts.Open(pathParam(r, "artifact_id"))
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	defer f.Close()
	serveArtifact(w, r, f, a, nil)
}

// installDownload serves the artifact of a verified signed link and counts
// the download once the whole binary went out.
func (s *agentUpdatesAPI) installDownload(w http.ResponseWriter, r *http.Request) {
	platform := pathParam(r, "platform")
	token := pathParam(r, "token")
	req := installlinks.ParseToken(token, platform)
	if token == "" {
		q := r.URL.Query()
		req = installlinks.Request{Platform: platform, SiteID: q.Get("site_id"), ArtifactID: q.Get("artifact"),
			Expires: q.Get("expires"), Signature: q.Get("download_signature")}
	}
	g, err := s.InstallLinks.Verify(r.Context(), req)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	f, a, err := s.Artifacts.Open(g.Artifact.ID)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	defer f.Close()
	serveArtifact(w, r, f, a, func() {
		if err := s.InstallLinks.Counted(context.WithoutCancel(r.Context()), g); err != nil {
			s.reqLog(r).Warn("count install download", "site_id", g.SiteID, "platform", g.Platform, "err", err)
		}
	})
}

// serveArtifact streams a binary with Range support; completed runs when
// the response carried the file's last byte and every byte of the range
// was written (a whole download, or the last part of a resumed one).
func serveArtifact(w http.ResponseWriter, r *http.Request, f io.ReadSeeker, a agentartifacts.Artifact, completed func()) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+a.FileName+`"`)
	h.Set("ETag", `"`+a.SHA256+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Cairn-Artifact-Id", a.ID)
	h.Set("X-Cairn-Build-Id", a.BuildID)
	h.Set("X-Cairn-Sha256", a.SHA256)
	cw := &countingWriter{ResponseWriter: w}
	http.ServeContent(cw, r, a.FileName, time.Time{}, f)
	if completed != nil && r.Method == http.MethodGet && cw.complete(a.Size) {
		completed()
	}
}

// countingWriter notes the status and the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	status  int
	written int64
}

func (c *countingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(b)
	c.written += int64(n)
	return n, err
}

// ReadFrom keeps the server's sendfile path for the file copy.
func (c *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := io.Copy(c.ResponseWriter, r)
	c.written += n
	return n, err
}

func (c *countingWriter) complete(size int64) bool {
	switch c.status {
	case http.StatusOK:
		return c.written == size
	case http.StatusPartialContent:
		// One range, "bytes first-last/size", reaching the end.
		cr := strings.TrimPrefix(c.Header().Get("Content-Range"), "bytes ")
		span, total, ok := strings.Cut(cr, "/")
		first, last, ok2 := strings.Cut(span, "-")
		if !ok || !ok2 || total != strconv.FormatInt(size, 10) {
			return false
		}
		lo, err1 := strconv.ParseInt(first, 10, 64)
		hi, err2 := strconv.ParseInt(last, 10, 64)
		return err1 == nil && err2 == nil && hi == size-1 && c.written == hi-lo+1
	}
	return false
}

// installLinkJSON is one platform's link in a site's install_links.
type installLinkJSON struct {
	URL            string    `json:"url"`
	TokenURL       string    `json:"token_url"`
	ExpiresAt      time.Time `json:"expires_at"`
	DownloadCount  int64     `json:"download_count"`
	ArtifactID     string    `json:"artifact_id"`
	BuildID        string    `json:"build_id"`
	InstallCommand string    `json:"install_command"`
	CreatedAt      time.Time `json:"created_at"`
}

func newInstallLinkJSON(l installlinks.Link) installLinkJSON {
	return installLinkJSON{URL: l.URL, TokenURL: l.TokenURL, ExpiresAt: l.ExpiresAt, DownloadCount: l.DownloadCount,
		ArtifactID: l.ArtifactID, BuildID: l.BuildID, InstallCommand: l.InstallCommand, CreatedAt: l.CreatedAt}
}

// artifactListJSON is every agent build the Engine serves.
type artifactListJSON struct {
	Artifacts []artifactJSON `json:"artifacts"`
}
