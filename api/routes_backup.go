package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
	"github.com/cairn-rmm/cairn/internal/backup"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// BackupArea are the backup routes (issue 26; SPEC "Server
// administration" and "Backup and restore rules").
type BackupArea struct {
	Backups *backup.Service
	// Restores runs the restore:<id> workflow.
	Restores workflowclient.RestoreStarter
	// Scheduled starts a scheduled backup; Drills a restore drill.
	Scheduled ScheduledBackupRunner
	Drills    ScheduledBackupRunner
}

type backupAPI struct {
	*Server
	BackupArea
}

// MaxBackupBytes bounds an uploaded backup file.
const MaxBackupBytes = 2 << 30

var backupErrors = []string{backup.ECodeMalformed, backup.ECodeWrongCipher, backup.ECodeUnsupported, cairn.ECodeTooLarge}

func (d BackupArea) routes(s *Server) []Route {
	a := &backupAPI{Server: s, BackupArea: d}
	const form = "multipart/form-data, fields before the file: `passphrase` (the source Engine's master-cipher passphrase; optional when this Engine's unlocked cipher wrote the file), then a `file` part (the backup)"
	return append(a.scheduleRoutes(), []Route{
		{"GET", "/api/server/backup/export", AuthAdmin, raw(a.export).Stream(http.StatusOK, "application/json").
			Summary("The encrypted backup file as an attachment; needs the master cipher unlocked").
			Errors(cairn.ECodeAegisLocked, cairn.ECodeConflict), "Export an encrypted backup"},
		{"POST", "/api/server/backup/analyze", AuthAdmin, raw(a.analyze(false)).Out(http.StatusOK, backup.Report{}).
			Summary(form + ". Decrypts and validates the file, compares its columns with the running schema and counts the rows a restore imports; changes nothing").
			Errors(backupErrors...), "Analyze a backup"},
		{"POST", "/api/server/backup/restore", AuthAdmin, raw(a.restore(false)).Out(http.StatusOK, restoreJSON{}).
			Summary(form + ", `confirmation` (exactly `" + backup.Confirmation + "`). Replaces configuration and trust with the backup's (no merge) through the restore:<id> workflow; signs every operator out and locks the master cipher").
			Errors(append(backupErrors, ECodeTemporalUnavailable)...), "Restore a backup"},
		{"POST", "/api/bootstrap/backup/analyze", AuthBootstrap, raw(a.analyze(true)).Out(http.StatusOK, backup.Report{}).
			Summary("On a fresh Engine (phase aegis_setup_required): " + form + " (required), `setup_code`").
			Errors(append(backupErrors, cairn.ECodeWrongPhase, auth.ECodeSetupCodeRequired)...), "Bootstrap: analyze a backup"},
		{"POST", "/api/bootstrap/backup/restore", AuthBootstrap, raw(a.restore(true)).Out(http.StatusOK, restoreJSON{}).
			Summary("Disaster recovery onto a fresh Engine (phase aegis_setup_required): " + form + " (required), `setup_code`, `confirmation` (exactly `" + backup.Confirmation + "`)").
			Errors(append(backupErrors, cairn.ECodeWrongPhase, auth.ECodeSetupCodeRequired)...), "Bootstrap: restore a backup"},
	}...)
}

func (s *backupAPI) export(w http.ResponseWriter, r *http.Request) {
	// Export writes nothing until the payload is sealed, so a refusal
	// (locked cipher) still gets its JSON error.
	var started bool
	hw := headerOnWrite{ResponseWriter: w, before: func() {
		started = true
		name := fmt.Sprintf("cairn-backup-%s.json", s.Now().UTC().Format("20060102-150405"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		w.Header().Set("Cache-Control", "no-store")
	}}
	if err := s.Backups.Export(r.Context(), &hw); err != nil {
		if !started {
			writeError(w, r, s.Log, err)
			return
		}
		s.reqLog(r).Error("backup export broke off", "err", err)
		return
	}
}

// headerOnWrite calls before at the first Write.
type headerOnWrite struct {
	http.ResponseWriter
	before func()
	done   bool
}

func (h *headerOnWrite) Write(b []byte) (int, error) {
	if !h.done {
		h.done = true
		h.before()
	}
	return h.ResponseWriter.Write(b)
}

// backupForm is an analyze or restore request.
type backupForm struct {
	file                                []byte
	passphrase, confirmation, setupCode string
}

// readBackupForm reads the multipart form; the file is held in memory
// (AES-GCM authenticates it whole before anything is used). beforeFile
// runs when the file part begins, with the fields sent before it: the
// bootstrap routes check the setup code there, so nobody without it makes
// a fresh Engine read a large upload.
func readBackupForm(w http.ResponseWriter, r *http.Request, beforeFile func(*backupForm) error) (*backupForm, error) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return nil, cairn.Invalid("body", "must be multipart/form-data")
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBackupBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, cairn.Invalid("body", "must be multipart/form-data with a boundary")
	}
	f := &backupForm{}
	seen := map[string]bool{}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, cairn.Errorf(cairn.ECodeTooLarge, "a backup file is at most %d bytes", MaxBackupBytes)
		}
		if err != nil {
			return nil, cairn.Invalid("body", "is not a well-formed multipart body")
		}
		name := p.FormName()
		if seen[name] {
			return nil, cairn.Invalid(name, "is given twice")
		}
		seen[name] = true
		switch name {
		case "file":
			if err := beforeFile(f); err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			if _, err := io.Copy(&buf, p); err != nil {
				if errors.As(err, &tooBig) {
					return nil, cairn.Errorf(cairn.ECodeTooLarge, "a backup file is at most %d bytes", MaxBackupBytes)
				}
				return nil, cairn.Invalid("file", "could not be read")
			}
			f.file = buf.Bytes()
		case "passphrase", "confirmation", "setup_code":
			v, err := io.ReadAll(io.LimitReader(p, 4097))
			if err != nil || len(v) > 4096 {
				return nil, cairn.Invalid(name, "must be at most 4096 bytes")
			}
			switch name {
			case "passphrase":
				f.passphrase = string(v)
			case "confirmation":
				f.confirmation = string(v)
			default:
				f.setupCode = string(v)
			}
		default:
			return nil, cairn.Invalid(name, "is not a field of this request")
		}
	}
	if len(f.file) == 0 {
		return nil, cairn.Invalid("file", "is required")
	}
	return f, nil
}

// open reads the form and decrypts the file. bootstrap: a fresh Engine,
// which needs the setup code and the source passphrase.
func (s *backupAPI) open(w http.ResponseWriter, r *http.Request, bootstrap bool) (*backupForm, *backup.Opened, error) {
	f, err := readBackupForm(w, r, func(f *backupForm) error {
		if !bootstrap {
			return nil
		}
		if f.passphrase == "" {
			return cairn.Invalid("passphrase", "is required, before the file part: the source Engine's master-cipher passphrase")
		}
		return s.Auth.BootstrapRestoreCheck(r.Context(), f.setupCode)
	})
	if err != nil {
		return nil, nil, err
	}
	o, err := s.Backups.Open(bytes.NewReader(f.file), f.passphrase)
	f.file = nil
	return f, o, err
}

func (s *backupAPI) analyze(bootstrap bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, o, err := s.open(w, r, bootstrap)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		rep, err := s.Backups.Analyze(r.Context(), o)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		writeJSON(w, http.StatusOK, rep)
	}
}

type restoreJSON struct {
	RestoreID string           `json:"restore_id"`
	Rows      map[string]int64 `json:"rows"`
	// Files are the files written back (the local CA; empty when this
	// Engine uses a provided certificate or the backup has none).
	Files []string `json:"files"`
	// RestartRequired: no orchestrator refreshes Cairn's processes; the
	// operator restarts every Engine and worker (same network mode), then
	// unlocks the restored cipher with the source passphrase.
	RestartRequired bool `json:"restart_required"`
	// Phase is the bootstrap phase after the restore (aegis_unlock_required).
	Phase string `json:"phase"`
}

func (s *backupAPI) restore(bootstrap bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res, err := s.doRestore(w, r, bootstrap)
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		writeJSON(w, http.StatusOK, res)
	}
}

func (s *backupAPI) doRestore(w http.ResponseWriter, r *http.Request, bootstrap bool) (restoreJSON, error) {
	ctx := r.Context()
	f, o, err := s.open(w, r, bootstrap)
	if err != nil {
		return restoreJSON{}, err
	}
	if f.confirmation != backup.Confirmation {
		return restoreJSON{}, cairn.Invalid("confirmation", "must be exactly "+backup.Confirmation)
	}
	actor := "bootstrap"
	if !bootstrap {
		actor = principal(ctx).Username
	}
	own := s.Backups.WrittenByHeldCipher(o)
	id, _, err := s.Backups.Stage(ctx, o, actor)
	if err != nil {
		return restoreJSON{}, err
	}
	// The local CA goes first: files are not part of the transaction, and
	// a CA written for a restore that then fails is harmless on a fresh
	// Engine and the same CA on a running one restoring its own backup.
	written, err := s.Backups.RestoreFiles(o, f.passphrase)
	if err != nil {
		return restoreJSON{}, err
	}
	var rows map[string]int64
	if bootstrap {
		// A fresh Engine has no master cipher, so it cannot seal Temporal
		// payloads and runs no workers: the one transaction is applied
		// here (docs/architecture.md "Backup and restore").
		res, err := s.Backups.Apply(ctx, id)
		if err != nil {
			return restoreJSON{}, err
		}
		rows = res.Rows
		s.setupFinished(r)
	} else {
		// Waited for past a client that goes away, so this replica still
		// locks its cipher when the workflow ends.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 45*time.Minute)
		defer cancel()
		res, err := s.Restores.Run(wctx, workflows.BackupRestoreInput{ID: id, Actor: actor, ForeignCipher: !own})
		if err != nil {
			return restoreJSON{}, err
		}
		rows = res.Rows
	}
	// Sessions went with the restored tables; the held key goes now, and
	// the other replicas are told to re-check theirs.
	s.Cipher.Lock()
	if err := s.Bus.Signal(ctx, events.ControlAegis); err != nil {
		s.reqLog(r).Error("tell replicas the cipher changed", "err", err)
	}
	phase, err := s.Auth.Phase(ctx)
	if err != nil {
		return restoreJSON{}, err
	}
	secure := s.secureOrigin(r)
	for _, name := range []string{cookieSession, cookieCSRF} {
		http.SetCookie(w, &http.Cookie{Name: cookieName(name, secure), Value: "", Path: "/", MaxAge: -1, HttpOnly: name == cookieSession,
			Secure: secure, SameSite: http.SameSiteStrictMode})
	}
	return restoreJSON{RestoreID: id, Rows: rows, Files: written, RestartRequired: true, Phase: phase}, nil
}
