// Package automation is saved automation content (assemblies, with
// versions) and job runs: one execution of a quick run, scheduled job,
// workflow step or agent maintenance over its resolved devices, with what
// happened on each (docs/api.md "Automation").
package automation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

// Assembly kinds.
const (
	KindScript          = "script"
	KindAnsiblePlaybook = "ansible_playbook"
	KindWorkflow        = "workflow"
)

// Limits (docs/api.md "Assemblies").
const (
	MaxName           = 200
	MaxDescription    = 4000
	MaxBody           = 256 << 10
	MaxParameters     = 32
	DefaultTimeout    = 300
	MaxTimeoutSeconds = 86400
	nameUniqueKey     = "assemblies_name_idx"
)

// ECodeAssemblyInUse: a scheduled job or workflow still uses the assembly.
const ECodeAssemblyInUse = "assembly_in_use"

// Languages a script assembly may have, by the platform that runs them.
var languages = map[string]string{
	proto.LangBash: "linux", proto.LangSh: "linux", proto.LangPython: "linux",
	proto.LangPowerShell: "windows", proto.LangCmd: "windows",
}

// LanguagePlatform is the platform family ("linux" or "windows") of a
// script language, "" for an unknown one.
func LanguagePlatform(lang string) string { return languages[lang] }

// Parameter names become environment variables (CAIRN_PARAM_<NAME>).
var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Parameter declares one input of an assembly.
type Parameter struct {
	Name     string `json:"name"`
	Label    string `json:"label"`
	Type     string `json:"type"`
	Default  any    `json:"default" openapi:"types=string|number|boolean|null"`
	Required bool   `json:"required"`
}

// Assembly is an assembly as of one version.
type Assembly struct {
	ID             int64
	Name           string
	Kind           string
	Language       string
	Description    string
	Version        int
	Body           string
	Parameters     []Parameter
	TimeoutSeconds int
	BodySHA256     string
	// RunAs is proto.RunAsSystem or proto.RunAsCurrentUser (scripts only).
	RunAs     string
	CreatedBy string
	CreatedAt time.Time
	UpdatedBy string
	UpdatedAt time.Time
	// Bundled: shipped with the Engine (EnsureBundled); read-only.
	Bundled bool
	// OwnerUserID is who created it; SiteScope the sites of everyone
	// who saved it (package ownership).
	OwnerUserID *int64
	SiteScope   cairn.SiteScope
}

// Version is one entry of an assembly's version list.
type Version struct {
	Version        int
	Language       string
	TimeoutSeconds int
	BodySHA256     string
	CreatedBy      string
	CreatedAt      time.Time
}

// AssemblyInput is a create or update request.
type AssemblyInput struct {
	Name           string
	Kind           string
	Language       string
	Description    string
	Body           string
	Parameters     []Parameter
	TimeoutSeconds int
	// RunAs is where a script runs: proto.RunAsSystem (empty means it) or
	// proto.RunAsCurrentUser, the signed-in user's session on Windows
	// agents that advertise the currentuser helper context.
	RunAs string
}

// Service implements assemblies and runs.
type Service struct {
	store   *db.Store
	signer  Signer
	devices *devices.Service
	now     func() time.Time
}

// NewService returns the service. signer signs run payloads (only in a
// process whose cipher is unlocked); dev records device activity rows.
func NewService(store *db.Store, signer Signer, dev *devices.Service) *Service {
	return &Service{store: store, signer: signer, devices: dev, now: time.Now}
}

// ListAssemblies returns assemblies (without bodies) of kind (any when
// empty) whose name or description contains q.
func (s *Service) ListAssemblies(ctx context.Context, kind, q string) ([]Assembly, error) {
	rows, err := s.store.AssemblyList(ctx, db.AssemblyListParams{Kind: kind, Q: strings.TrimSpace(q)})
	if err != nil {
		return nil, err
	}
	out := make([]Assembly, len(rows))
	for i, r := range rows {
		out[i] = Assembly{ID: r.ID, Name: r.Name, Kind: r.Kind, Language: r.Language, Description: r.Description,
			Version: int(r.CurrentVersion), Parameters: decodeParams(r.Parameters), TimeoutSeconds: int(r.TimeoutSeconds), RunAs: r.RunAs,
			BodySHA256: hex.EncodeToString(r.BodySha256), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
			UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt, Bundled: r.Bundled, OwnerUserID: r.OwnerUserID,
			SiteScope: cairn.ScopeColumn(r.SiteScope)}
	}
	return out, nil
}

// GetAssembly returns an assembly as of version (the current one when 0).
func (s *Service) GetAssembly(ctx context.Context, id int64, version int) (Assembly, error) {
	r, err := s.store.AssemblyGet(ctx, db.AssemblyGetParams{ID: id, Version: int32(version)})
	if err != nil {
		if version > 0 {
			return Assembly{}, db.NotFound(err, "assembly %d has no version %d", id, version)
		}
		return Assembly{}, db.NotFound(err, "assembly %d not found", id)
	}
	return Assembly{ID: r.ID, Name: r.Name, Kind: r.Kind, Language: r.Language, Description: r.Description,
		Version: int(r.Version), Body: r.Body, Parameters: decodeParams(r.Parameters), TimeoutSeconds: int(r.TimeoutSeconds),
		BodySHA256: hex.EncodeToString(r.BodySha256), RunAs: r.RunAs, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt,
		UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt, Bundled: r.Bundled, OwnerUserID: r.OwnerUserID,
		SiteScope: cairn.ScopeColumn(r.SiteScope)}, nil
}

// CreateAssembly stores a new assembly as version 1, owned by by and
// scoped to by's sites.
func (s *Service) CreateAssembly(ctx context.Context, by ownership.Editor, in AssemblyInput) (Assembly, error) {
	actor := by.Username
	in, err := checkAssembly(in)
	if err != nil {
		return Assembly{}, err
	}
	var id int64
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		a, err := q.AssemblyInsert(ctx, db.AssemblyInsertParams{Name: in.Name, Kind: in.Kind, Language: in.Language,
			Description: in.Description, Actor: actor, OwnerUserID: by.Owner(), SiteScope: by.Scope.Column()})
		if err != nil {
			return err
		}
		id = a.ID
		return insertVersion(ctx, q, id, 1, actor, in)
	})
	if err != nil {
		return Assembly{}, nameTaken(err, in.Name)
	}
	return s.GetAssembly(ctx, id, 0)
}

// UpdateAssembly replaces an assembly's fields. A change of body,
// language, parameters or timeout adds a version (runs keep pointing at the
// version they ran); name and description changes do not. Bundled
// assemblies are read-only (bundled_read_only); by must cover the
// assembly's scope, and no work saved by a broader scope may use it
// (CheckChange).
func (s *Service) UpdateAssembly(ctx context.Context, by ownership.Editor, id int64, in AssemblyInput) (Assembly, error) {
	actor := by.Username
	in, err := checkAssembly(in)
	if err != nil {
		return Assembly{}, err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		a, err := q.AssemblyGetForUpdate(ctx, id)
		if err != nil {
			return db.NotFound(err, "assembly %d not found", id)
		}
		if err := mayChange(ctx, q, by, a); err != nil {
			return err
		}
		if err := q.AssemblySetScope(ctx, db.AssemblySetScopeParams{ID: id,
			SiteScope: ownership.Scope(by, cairn.ScopeColumn(a.SiteScope)).Column()}); err != nil {
			return err
		}
		cur, err := q.AssemblyGet(ctx, db.AssemblyGetParams{ID: id})
		if err != nil {
			return err
		}
		version := a.CurrentVersion
		params, _ := json.Marshal(in.Parameters)
		if cur.Body != in.Body || cur.Language != in.Language || int(cur.TimeoutSeconds) != in.TimeoutSeconds ||
			!sameJSON(cur.Parameters, params) || cur.RunAs != in.RunAs {
			version++
			if err := insertVersion(ctx, q, id, version, actor, in); err != nil {
				return err
			}
		}
		return q.AssemblyUpdate(ctx, db.AssemblyUpdateParams{ID: id, Name: in.Name, Kind: in.Kind, Language: in.Language,
			Description: in.Description, CurrentVersion: version, Actor: actor})
	})
	if err != nil {
		return Assembly{}, nameTaken(err, in.Name)
	}
	return s.GetAssembly(ctx, id, 0)
}

// DeleteAssembly removes an assembly and its versions; runs keep their
// results (their assembly link becomes empty). An assembly a scheduled job
// uses is refused with assembly_in_use, a bundled one with
// bundled_read_only, one whose scope by does not cover with forbidden.
func (s *Service) DeleteAssembly(ctx context.Context, by ownership.Editor, id int64) error {
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		a, err := q.AssemblyGetForUpdate(ctx, id)
		if err != nil {
			return db.NotFound(err, "assembly %d not found", id)
		}
		if a.BundledKey != nil {
			return bundledReadOnly(id)
		}
		return ownership.CheckChange(by, fmt.Sprintf("assembly %d", id), cairn.ScopeColumn(a.SiteScope), nil)
	})
	if err != nil {
		return err
	}
	inUse, err := s.store.AssemblyInUse(ctx, &id)
	if err != nil {
		return err
	}
	if inUse {
		return cairn.Errorf(ECodeAssemblyInUse, "assembly %d is used by a scheduled job; change or delete the job first", id)
	}
	n, err := s.store.AssemblyDelete(ctx, id)
	if db.IsForeignKeyViolation(err) {
		return cairn.Errorf(ECodeAssemblyInUse, "assembly %d is used by a scheduled job; change or delete the job first", id)
	} else if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "assembly %d not found", id)
	}
	return nil
}

// ListVersions returns an assembly's versions, newest first.
func (s *Service) ListVersions(ctx context.Context, id int64) ([]Version, error) {
	rows, err := s.store.AssemblyVersionList(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, cairn.Errorf(cairn.ECodeNotFound, "assembly %d not found", id)
	}
	out := make([]Version, len(rows))
	for i, r := range rows {
		out[i] = Version{Version: int(r.Version), Language: r.Language, TimeoutSeconds: int(r.TimeoutSeconds),
			BodySHA256: hex.EncodeToString(r.BodySha256), CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// mayChange refuses a change of assembly a: bundled ones always, others
// when by's scope does not cover a's or work saved by a broader scope
// runs it (a scheduled job, or a flow with a step running it).
func mayChange(ctx context.Context, q *db.Queries, by ownership.Editor, a db.Assembly) error {
	if a.BundledKey != nil {
		return bundledReadOnly(a.ID)
	}
	jobs, err := q.AssemblyDependantJobs(ctx, &a.ID)
	if err != nil {
		return err
	}
	flows, err := q.AssemblyDependantFlows(ctx, a.ID)
	if err != nil {
		return err
	}
	deps := make([]ownership.Dependant, 0, len(jobs)+len(flows))
	for _, j := range jobs {
		deps = append(deps, ownership.Dependant{Kind: ownership.KindScheduledJob, ID: j.ID, Name: j.Name, Scope: cairn.ScopeColumn(j.TargetScope)})
	}
	for _, f := range flows {
		deps = append(deps, ownership.Dependant{Kind: ownership.KindWorkflow, ID: f.ID, Name: f.Name, Scope: cairn.ScopeColumn(f.SiteScope)})
	}
	return ownership.CheckChange(by, fmt.Sprintf("assembly %d", a.ID), cairn.ScopeColumn(a.SiteScope), deps)
}

func insertVersion(ctx context.Context, q *db.Queries, id int64, version int32, actor string, in AssemblyInput) error {
	params, err := json.Marshal(in.Parameters)
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(in.Body))
	return q.AssemblyVersionInsert(ctx, db.AssemblyVersionInsertParams{AssemblyID: id, Version: version, Language: in.Language,
		Body: in.Body, Parameters: params, TimeoutSeconds: int32(in.TimeoutSeconds), BodySha256: sum[:], Actor: actor, RunAs: in.RunAs})
}

// checkAssembly normalizes and validates in, reporting every bad field.
func checkAssembly(in AssemblyInput) (AssemblyInput, error) {
	in.Name = strings.TrimSpace(in.Name)
	var v cairn.Validation
	switch n := len([]rune(in.Name)); {
	case n == 0:
		v.Add("name", "is required")
	case n > MaxName:
		v.Add("name", fmt.Sprintf("must be at most %d characters", MaxName))
	case strings.ContainsFunc(in.Name, unicode.IsControl):
		v.Add("name", "must not contain control characters")
	}
	switch in.Kind {
	case KindScript:
		if languages[in.Language] == "" {
			v.Add("language", "must be bash, sh or python (Linux), or powershell or cmd (Windows)")
		}
		if strings.TrimSpace(in.Body) == "" {
			v.Add("body", "is required")
		}
	case KindAnsiblePlaybook, KindWorkflow:
		if in.Language != "" {
			v.Add("language", "must be empty for a "+in.Kind)
		}
		if in.Kind == KindAnsiblePlaybook {
			if msg := checkPlaybook(in.Body); msg != "" {
				v.Add("body", msg)
			}
		}
	default:
		v.Add("kind", "must be script, ansible_playbook or workflow")
	}
	if len([]rune(in.Description)) > MaxDescription {
		v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
	}
	if len(in.Body) > MaxBody {
		v.Add("body", fmt.Sprintf("must be at most %d bytes", MaxBody))
	}
	if in.TimeoutSeconds == 0 {
		in.TimeoutSeconds = DefaultTimeout
	}
	if in.RunAs == "" {
		in.RunAs = proto.RunAsSystem
	}
	switch {
	case !validRunAs(in.RunAs):
		v.Add("run_as", runAsRule)
	case in.RunAs == proto.RunAsCurrentUser && in.Kind != KindScript:
		v.Add("run_as", "must be system for a "+in.Kind+": only scripts run in the user's session")
	}
	if in.TimeoutSeconds < 1 || in.TimeoutSeconds > MaxTimeoutSeconds {
		v.Add("timeout_seconds", fmt.Sprintf("must be between 1 and %d", MaxTimeoutSeconds))
	}
	if in.Parameters == nil {
		in.Parameters = []Parameter{}
	}
	checkParameters(&v, in.Parameters)
	return in, v.Err()
}

// runAsRule is the validation message of a bad run_as.
const runAsRule = "must be system or current_user (the signed-in user's session, Windows agents only)"

func validRunAs(runAs string) bool {
	return runAs == proto.RunAsSystem || runAs == proto.RunAsCurrentUser
}

func checkParameters(v *cairn.Validation, params []Parameter) {
	if len(params) > MaxParameters {
		v.Add("parameters", fmt.Sprintf("must have at most %d entries", MaxParameters))
		return
	}
	seen := map[string]bool{}
	for i, p := range params {
		field := fmt.Sprintf("parameters[%d]", i)
		key := strings.ToUpper(p.Name)
		switch {
		case !paramName.MatchString(p.Name):
			v.Add(field+".name", "must be a letter or '_' followed by letters, digits or '_' (at most 64)")
		case seen[key]:
			v.Add(field+".name", "is a duplicate (names are case-insensitive)")
		}
		seen[key] = true
		if p.Type != "string" && p.Type != "number" && p.Type != "boolean" {
			v.Add(field+".type", "must be string, number or boolean")
		} else if p.Default != nil {
			if _, err := paramValue(p.Type, p.Default); err != nil {
				v.Add(field+".default", err.Error())
			}
		}
		if len([]rune(p.Label)) > MaxName {
			v.Add(field+".label", fmt.Sprintf("must be at most %d characters", MaxName))
		}
	}
}

// paramValue turns a parameter value of type typ into the text its
// environment variable holds.
func paramValue(typ string, val any) (string, error) {
	switch typ {
	case "number":
		switch n := val.(type) {
		case float64:
			return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%f", n), "0"), "."), nil
		case json.Number:
			return n.String(), nil
		}
		return "", fmt.Errorf("must be a number")
	case "boolean":
		if b, ok := val.(bool); ok {
			if b {
				return "true", nil
			}
			return "false", nil
		}
		return "", fmt.Errorf("must be true or false")
	default:
		if s, ok := val.(string); ok {
			return s, nil
		}
		return "", fmt.Errorf("must be a string")
	}
}

func decodeParams(b []byte) []Parameter {
	out := []Parameter{}
	_ = json.Unmarshal(b, &out)
	return out
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

func nameTaken(err error, name string) error {
	if db.IsUniqueViolation(err, nameUniqueKey) {
		return &cairn.Error{Code: cairn.ECodeConflict, Message: "another assembly has this name",
			Fields: map[string]string{"name": fmt.Sprintf("%q is already used", name)}}
	}
	return err
}
