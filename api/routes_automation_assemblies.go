package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/automation"
)

// assemblyRoutes are saved automation content (docs/api.md "Assemblies").
func (s *Server) assemblyRoutes() []Route {
	return []Route{
		{"GET", "/api/assemblies", AuthToken, getAction(s, func(r *http.Request) (assemblyListJSON, error) {
			q := r.URL.Query()
			list, err := s.Automation.ListAssemblies(r.Context(), q.Get("kind"), q.Get("q"))
			out := make([]assemblyJSON, len(list))
			for i, a := range list {
				out[i] = toAssemblyJSON(a, false)
			}
			return assemblyListJSON{Assemblies: out}, err
		}).Query(queryString("kind", "only assemblies of this kind"), queryString("q", "a search in names and descriptions")), "List assemblies"},
		{"POST", "/api/assemblies", AuthToken, withBodyLimit(maxScriptBody, jsonAction(s, http.StatusCreated, false, func(r *http.Request, req assemblyRequest) (assemblyJSON, error) {
			a, err := s.Automation.CreateAssembly(r.Context(), editor(r), req.input())
			return toAssemblyJSON(a, true), err
		})).Errors(cairn.ECodeConflict, cairn.ECodeTooLarge), "Create an assembly"},
		{"GET", "/api/assemblies/{assembly_id}", AuthToken, getAction(s, func(r *http.Request) (assemblyJSON, error) {
			id, err := pathID(r, "assembly_id")
			if err != nil {
				return assemblyJSON{}, err
			}
			a, err := s.Automation.GetAssembly(r.Context(), id, 0)
			return toAssemblyJSON(a, true), err
		}).Errors(cairn.ECodeNotFound), "Get an assembly"},
		{"PUT", "/api/assemblies/{assembly_id}", AuthToken, withBodyLimit(maxScriptBody, jsonAction(s, http.StatusOK, false, func(r *http.Request, req assemblyRequest) (assemblyJSON, error) {
			id, err := pathID(r, "assembly_id")
			if err != nil {
				return assemblyJSON{}, err
			}
			a, err := s.Automation.UpdateAssembly(r.Context(), editor(r), id, req.input())
			return toAssemblyJSON(a, true), err
		})).Errors(cairn.ECodeNotFound, cairn.ECodeConflict, cairn.ECodeTooLarge, cairn.ECodeForbidden,
			cairn.ECodeDependantsExist, cairn.ECodeBundledReadOnly), "Update an assembly"},
		{"DELETE", "/api/assemblies/{assembly_id}", AuthToken, jsonAction(s, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := pathID(r, "assembly_id")
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Automation.DeleteAssembly(r.Context(), editor(r), id)
		}).Errors(cairn.ECodeNotFound, automation.ECodeAssemblyInUse, cairn.ECodeForbidden, cairn.ECodeBundledReadOnly), "Delete an assembly"},
		{"GET", "/api/assemblies/{assembly_id}/versions", AuthToken, getAction(s, func(r *http.Request) (versionListJSON, error) {
			id, err := pathID(r, "assembly_id")
			if err != nil {
				return versionListJSON{}, err
			}
			list, err := s.Automation.ListVersions(r.Context(), id)
			out := make([]versionJSON, len(list))
			for i, v := range list {
				out[i] = versionJSON{Version: v.Version, Language: v.Language, TimeoutSeconds: v.TimeoutSeconds,
					BodySHA256: v.BodySHA256, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt.UTC()}
			}
			return versionListJSON{Versions: out}, err
		}).Errors(cairn.ECodeNotFound), "List an assembly's versions"},
		{"GET", "/api/assemblies/{assembly_id}/versions/{version}", AuthToken, getAction(s, func(r *http.Request) (assemblyJSON, error) {
			id, err := pathID(r, "assembly_id")
			if err != nil {
				return assemblyJSON{}, err
			}
			v, err := strconv.Atoi(chi.URLParam(r, "version"))
			if err != nil || v <= 0 {
				return assemblyJSON{}, cairn.Invalid("version", "must be a positive integer")
			}
			a, err := s.Automation.GetAssembly(r.Context(), id, v)
			return toAssemblyJSON(a, true), err
		}).Errors(cairn.ECodeNotFound), "Get an assembly version"},
	}
}

type parameterJSON struct {
	Name     string `json:"name"`
	Label    string `json:"label"`
	Type     string `json:"type"`
	Default  any    `json:"default" openapi:"types=string|number|boolean|null"`
	Required bool   `json:"required"`
}

type assemblyRequest struct {
	Name           string          `json:"name" limit:"max=200"`
	Kind           string          `json:"kind"`
	Language       string          `json:"language"`
	Description    string          `json:"description" limit:"max=4000"`
	Body           string          `json:"body" limit:"max=262144"`
	Parameters     []parameterJSON `json:"parameters" limit:"max=32"`
	TimeoutSeconds int             `json:"timeout_seconds" limit:"min=0,max=86400"`
	// RunAs is system (default) or current_user: a script that runs in
	// the signed-in user's session (Windows agents advertising the
	// currentuser helper context).
	RunAs string `json:"run_as" limit:"max=32"`
}

func (a assemblyRequest) input() automation.AssemblyInput {
	in := automation.AssemblyInput{Name: a.Name, Kind: a.Kind, Language: a.Language, Description: a.Description,
		Body: a.Body, TimeoutSeconds: a.TimeoutSeconds, RunAs: a.RunAs, Parameters: make([]automation.Parameter, len(a.Parameters))}
	for i, p := range a.Parameters {
		in.Parameters[i] = automation.Parameter(p)
	}
	return in
}

type assemblyJSON struct {
	ID             int64           `json:"id"`
	Name           string          `json:"name"`
	Kind           string          `json:"kind"`
	Language       string          `json:"language"`
	Description    string          `json:"description"`
	Version        int             `json:"version"`
	Body           *string         `json:"body,omitempty"`
	Parameters     []parameterJSON `json:"parameters"`
	TimeoutSeconds int             `json:"timeout_seconds"`
	RunAs          string          `json:"run_as"`
	BodySHA256     string          `json:"body_sha256"`
	CreatedBy      string          `json:"created_by"`
	CreatedAt      time.Time       `json:"created_at"`
	UpdatedBy      string          `json:"updated_by"`
	UpdatedAt      time.Time       `json:"updated_at"`
	// Bundled: shipped with the Engine; read-only (bundled_read_only).
	Bundled bool `json:"bundled"`
	// OwnerUserID created the assembly; SiteScope is the sites of
	// everyone who saved it (null: every site): only a caller whose sites
	// cover it may change it (docs/api.md "Shared objects: owner and
	// scope").
	OwnerUserID *int64  `json:"owner_user_id"`
	SiteScope   []int64 `json:"site_scope" openapi:"nullable"`
}

type versionJSON struct {
	Version        int       `json:"version"`
	Language       string    `json:"language"`
	TimeoutSeconds int       `json:"timeout_seconds"`
	BodySHA256     string    `json:"body_sha256"`
	CreatedBy      string    `json:"created_by"`
	CreatedAt      time.Time `json:"created_at"`
}

func toAssemblyJSON(a automation.Assembly, withBody bool) assemblyJSON {
	out := assemblyJSON{ID: a.ID, Name: a.Name, Kind: a.Kind, Language: a.Language, Description: a.Description,
		Version: a.Version, Parameters: make([]parameterJSON, len(a.Parameters)), TimeoutSeconds: a.TimeoutSeconds, RunAs: a.RunAs,
		BodySHA256: a.BodySHA256, CreatedBy: a.CreatedBy, CreatedAt: a.CreatedAt.UTC(), UpdatedBy: a.UpdatedBy,
		UpdatedAt: a.UpdatedAt.UTC(), Bundled: a.Bundled, OwnerUserID: a.OwnerUserID, SiteScope: a.SiteScope.Column()}
	if withBody {
		out.Body = &a.Body
	}
	for i, p := range a.Parameters {
		out.Parameters[i] = parameterJSON(p)
	}
	return out
}

type assemblyListJSON struct {
	Assemblies []assemblyJSON `json:"assemblies"`
}

// versionListJSON is an assembly's versions, newest first.
type versionListJSON struct {
	Versions []versionJSON `json:"versions"`
}
