package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/transfers"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// TransfersArea are the routes of Transfers, over the services only they use.
type TransfersArea struct {
	// Transfers are file transfers and their content store.
	Transfers *transfers.Service
	// TransferStarter starts and signals their workflows.
	TransferStarter workflowclient.TransferStarter
}

type transfersAPI struct {
	*Server
	TransfersArea
}

func (d TransfersArea) routes(s *Server) []Route {
	a := &transfersAPI{Server: s, TransfersArea: d}
	s.endTransfers = a.transfersEnded
	return slices.Concat(a.fileTransferRoutes())
}

// transferStartErrors are what starting a transfer may answer: the device
// unknown or out of scope, refusing operations or without a socket, and
// the workflow not started (Temporal unreachable or too busy).
var transferStartErrors = []string{cairn.ECodeNotFound, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked,
	cairn.ECodeAgentSocketMissing, cairn.ECodeAgentTooOld, ECodeTemporalUnavailable, cairn.ECodeUnavailable,
	cairn.ECodeTransferLimitReached, cairn.ECodeTransferQuotaExceeded, cairn.ECodeInsufficientStorage}

// fileTransferRoutes are the file manager's transfers (SPEC "File
// management", docs/api.md "File transfers"): operators stage uploads and
// start downloads, agents work through the transfer callbacks. Content
// streams through the PostgreSQL content store (internal/transfers); the
// FileTransfer workflow drives each transfer.
func (s *transfersAPI) fileTransferRoutes() []Route {
	const base = "/api/device/files/{hostname}"
	const agent = proto.PathFileTransfers + "{transfer_id}"
	return []Route{
		{"POST", base + "/upload", AuthToken, raw(s.fileUpload).Out(http.StatusAccepted, fileTransferJSON{}).
			Summary("Stage browser files (multipart/form-data: destination, conflict, manifest, file parts) and start the upload").
			Errors(append(transferStartErrors, transfers.ECodeUploadTooLarge)...), "Upload files to a device"},
		{"POST", base + "/download", AuthToken, jsonAction(s.Server, http.StatusAccepted, false, s.fileDownload).
			Errors(transferStartErrors...), "Download files from a device"},
		{"GET", base + "/transfer/{transfer_id}/status", AuthToken, getAction(s.Server, s.transferStatus).
			Errors(cairn.ECodeNotFound, transfers.ECodeTransferNotFound), "Get a file transfer's status"},
		{"POST", base + "/transfer/{transfer_id}/cancel", AuthToken, jsonAction(s.Server, http.StatusOK, true, s.transferCancel).
			Errors(cairn.ECodeNotFound, transfers.ECodeTransferNotFound, ECodeTemporalUnavailable), "Cancel a file transfer"},
		// A downloaded file is device content, whoever started the download.
		{"GET", base + "/transfer/{transfer_id}/content", AuthToken, s.deviceContent(raw(s.transferContent).Stream(http.StatusOK, "application/octet-stream").
			Summary("The completed download's artifact (Content-Disposition attachment, X-Content-SHA256)").
			Errors(cairn.ECodeNotFound, transfers.ECodeTransferNotFound, transfers.ECodeTransferNotReady, transfers.ECodeContentExpired)), "Download a completed transfer's file"},

		{"GET", agent + "/upload-item/{item_id}", AuthDevice, raw(s.agentUploadItem).Stream(http.StatusOK, "application/octet-stream").
			Errors(transfers.ECodeTransferNotFound, transfers.ECodeTransferCancelled, transfers.ECodeTransferEnded), "Agent: read an upload item"},
		{"GET", agent + "/status", AuthDevice, getAction(s.Server, s.agentTransferStatus).Errors(transfers.ECodeTransferNotFound), "Agent: get a file transfer's status"},
		{"POST", agent + "/progress", AuthDevice, jsonAction(s.Server, http.StatusOK, false, s.agentTransferProgress).
			Errors(transfers.ECodeTransferNotFound, transfers.ECodeTransferCancelled, transfers.ECodeTransferEnded), "Agent: report file transfer progress"},
		{"POST", agent + "/content", AuthDevice, raw(s.agentTransferContent).Out(http.StatusOK, proto.TransferStatus{}).
			Summary("Stream a finished download's artifact (headers X-Content-SHA256, X-Content-Name)").
			Errors(transfers.ECodeTransferNotFound, transfers.ECodeTransferCancelled, transfers.ECodeTransferEnded,
				transfers.ECodeChecksumMismatch, transfers.ECodeUploadTooLarge, cairn.ECodeTransferQuotaExceeded, cairn.ECodeInsufficientStorage), "Agent: send a download's content"},
	}
}

// fileTransferJSON is a transfer snapshot (docs/api.md "File transfers").
type fileTransferJSON struct {
	TransferID  cairn.TransferID       `json:"transfer_id"`
	Direction   string                 `json:"direction" openapi:"enum=upload|download"`
	State       string                 `json:"state" openapi:"enum=queued|running|completed|failed|cancelled"`
	BytesTotal  int64                  `json:"bytes_total"`
	BytesDone   int64                  `json:"bytes_done"`
	Items       []fileTransferItemJSON `json:"items"`
	Error       *fileTransferErrorJSON `json:"error"`
	CreatedAt   time.Time              `json:"created_at"`
	UpdatedAt   time.Time              `json:"updated_at"`
	ContentName string                 `json:"content_name"`
}

type fileTransferItemJSON struct {
	ItemID int32  `json:"item_id"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	State  string `json:"state"`
}

type fileTransferErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newFileTransferJSON(s transfers.Snapshot) fileTransferJSON {
	t := s.Transfer
	out := fileTransferJSON{TransferID: t.ID, Direction: t.Direction, State: t.State, BytesTotal: t.BytesTotal,
		BytesDone: t.BytesDone, Items: make([]fileTransferItemJSON, len(s.Items)), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		ContentName: t.ContentName}
	for i, it := range s.Items {
		out.Items[i] = fileTransferItemJSON{ItemID: it.ItemID, Name: it.Name, Size: it.Size, SHA256: it.Sha256, State: it.State}
	}
	if t.ErrorCode != "" {
		out.Error = &fileTransferErrorJSON{Code: t.ErrorCode, Message: t.ErrorMessage}
	}
	return out
}

// transferTarget is the device a new transfer goes to: in scope, trusted,
// with a live socket (as for every operation) and an agent that has the
// transfers capability.
func (s *transfersAPI) transferTarget(ctx context.Context, hostname string) (devices.OperationTarget, error) {
	t, err := s.Devices.OperationTarget(ctx, principal(ctx).SiteScope(), hostname)
	if err != nil {
		return t, err
	}
	if !t.SocketLive {
		return t, cairn.Errorf(cairn.ECodeAgentSocketMissing,
			"the agent of %s has no realtime connection; onboarding takes about a minute", t.Hostname)
	}
	return t, t.Require(proto.CapTransfers)
}

// scopedTransfer is a transfer of the device named in the path, inside the
// operator's scope; reads and cancel work on untrusted devices too.
func (s *transfersAPI) scopedTransfer(r *http.Request) (transfers.Snapshot, error) {
	ctx, hostname := r.Context(), pathParam(r, "hostname")
	_, err := s.Devices.OperationTarget(ctx, principal(ctx).SiteScope(), hostname)
	if err != nil && !cairn.IsCode(err, devicetrust.ECodeDeviceQuarantined) && !cairn.IsCode(err, devicetrust.ECodeDeviceRevoked) {
		return transfers.Snapshot{}, err
	}
	id := cairn.TransferID(pathParam(r, "transfer_id"))
	if err := checkTransferID(id); err != nil {
		return transfers.Snapshot{}, err
	}
	return s.Transfers.InScope(ctx, principal(ctx).SiteScope(), hostname, id)
}

func checkTransferID(id cairn.TransferID) error {
	if _, err := uuid.Parse(string(id)); err != nil || len(id) != 36 {
		return cairn.Invalid("transfer_id", "must be a transfer ID (a UUID)")
	}
	return nil
}

// absolutePath accepts what either platform calls absolute: /x, C:\x,
// C:/x or \\server\share; the agent applies its platform's rules.
var absolutePath = regexp.MustCompile(`^(/|[A-Za-z]:[\\/]|\\\\[^\\]+\\[^\\]+)`)

func checkAbsolute(field, p string) error {
	if p == "" || len(p) > transfers.MaxNameBytes || strings.ContainsRune(p, 0) || !absolutePath.MatchString(p) {
		return cairn.Invalid(field, "must be an absolute path")
	}
	return nil
}

// maxUploadPayload keeps an upload's request to the agent well under
// Temporal's payload limit (2 MiB): the item list travels in it.
const maxUploadPayload = 512 << 10

// uploadForm is what the non-file fields of an upload said.
type uploadForm struct {
	destination string
	conflict    string
	directories []string
}

func (f *uploadForm) validate() error {
	if err := checkAbsolute("destination", f.destination); err != nil {
		return err
	}
	switch f.conflict {
	case "":
		f.conflict = transfers.ConflictRename
	case transfers.ConflictOverwrite, transfers.ConflictSkip, transfers.ConflictRename:
	default:
		return cairn.Invalid("conflict", "must be overwrite, skip or rename")
	}
	return nil
}

// fileUpload stages a multipart upload part by part into the content
// store (never a whole file in memory), then starts the transfer.
func (s *transfersAPI) fileUpload(w http.ResponseWriter, r *http.Request) {
	snap, err := s.stageUpload(w, r)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusAccepted, newFileTransferJSON(snap))
}

func (s *transfersAPI) stageUpload(w http.ResponseWriter, r *http.Request) (transfers.Snapshot, error) {
	ctx := r.Context()
	target, err := s.transferTarget(ctx, pathParam(r, "hostname"))
	if err != nil {
		return transfers.Snapshot{}, err
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
		return transfers.Snapshot{}, cairn.Invalid("body", "must be multipart/form-data")
	}
	// The parts' headers and form fields ride on top of the files.
	r.Body = http.MaxBytesReader(w, r.Body, s.Transfers.MaxBytes()+16<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		return transfers.Snapshot{}, cairn.Invalid("body", "must be multipart/form-data with a boundary")
	}
	extendDeadlines(w)
	var form uploadForm
	id := cairn.TransferID(uuid.NewString())
	created := false
	var up *transfers.Upload
	// The request's size, when it says it, is what the upload reserves of
	// the staging budgets before a byte is stored.
	declared := max(r.ContentLength, 0)
	create := func() error {
		var err error
		up, err = s.Transfers.NewUpload(ctx, id, target, principal(ctx).Username, form.destination, form.conflict, form.directories, declared)
		return err
	}
	fail := func(err error) (transfers.Snapshot, error) {
		if created {
			bg := context.WithoutCancel(ctx)
			code, msg := "staging_failed", "the upload did not arrive whole"
			var ce *cairn.Error
			if errors.As(err, &ce) {
				code, msg = ce.Code, ce.Message
			}
			if _, ferr := s.Transfers.Finish(bg, id, transfers.StateFailed, code, msg); ferr != nil {
				s.reqLog(r).Warn("record a failed upload", "transfer_id", id, "err", ferr)
			}
			if perr := s.Transfers.Purge(bg, id); perr != nil {
				s.reqLog(r).Warn("purge a failed upload", "transfer_id", id, "err", perr)
			}
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = cairn.Errorf(transfers.ECodeUploadTooLarge, "the upload is larger than the Engine's limit of %d bytes", s.Transfers.MaxBytes())
		}
		return transfers.Snapshot{}, err
	}
	var items []proto.TransferItem
	names := map[string]bool{}
	budget := s.Transfers.MaxBytes()
	var total int64
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return fail(err)
			}
			return fail(cairn.Invalid("body", "is not a well-formed multipart body: "+err.Error()))
		}
		switch part.FormName() {
		case "destination", "conflict", "manifest":
			if created {
				return fail(cairn.Invalid(part.FormName(), "must come before the file parts"))
			}
			if err := readField(part, &form); err != nil {
				return fail(err)
			}
		case "file":
			if !created {
				if err := form.validate(); err != nil {
					return fail(err)
				}
				if err := create(); err != nil {
					return fail(err)
				}
				created = true
			}
			name, ok := transfers.CleanRelative(partFileName(part))
			if !ok {
				return fail(cairn.Invalid("file", "each file part needs a filename relative to destination (a/b.txt), without .., NUL or backslashes"))
			}
			if names[name] {
				return fail(cairn.Invalid("file", fmt.Sprintf("%q is in the upload twice", name)))
			}
			if len(items) >= transfers.MaxItems {
				return fail(cairn.Invalid("file", fmt.Sprintf("at most %d files per upload", transfers.MaxItems)))
			}
			names[name] = true
			itemID := int32(len(items) + 1)
			size, sum, err := s.Transfers.StageItem(ctx, up, itemID, name, part, budget)
			if err != nil {
				return fail(err)
			}
			budget -= size
			total += size
			items = append(items, proto.TransferItem{ItemID: itemID, Name: name, Size: size, SHA256: sum})
		default:
			return fail(cairn.Invalid(part.FormName(), "is not a field of an upload (destination, conflict, manifest, file)"))
		}
	}
	if !created {
		if err := form.validate(); err != nil {
			return fail(err)
		}
		if len(form.directories) == 0 {
			return fail(cairn.Invalid("file", "is required: at least one file part or a manifest directory"))
		}
		declared = 0 // folders only: nothing to stage
		if err := create(); err != nil {
			return fail(err)
		}
		created = true
	}
	if err := s.Transfers.SetTotal(ctx, up, total); err != nil {
		return fail(err)
	}
	req := proto.TransferRequest{Action: proto.FileActionUpload, TransferID: string(id), Destination: form.destination,
		Conflict: form.conflict, Directories: form.directories, Items: items}
	payload, err := json.Marshal(req)
	if err != nil {
		return fail(err)
	}
	if len(payload) > maxUploadPayload {
		return fail(cairn.Invalid("file", "the upload names too many files or directories for one transfer; split it"))
	}
	summary := fmt.Sprintf("Upload %d file(s) to %s", len(items), form.destination)
	if err := s.TransferStarter.Start(ctx, workflows.FileTransferInput{TransferID: id, Target: target, Request: payload,
		Kind: "file_upload", Summary: summary, Actor: principal(ctx).Username}); err != nil {
		return fail(err)
	}
	return s.Transfers.Get(ctx, id)
}

// partFileName is the part's filename as sent: multipart.Part.FileName
// keeps only the base name, and a folder upload's names are relative paths.
func partFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

// readField reads one small form field into form.
func readField(p *multipart.Part, form *uploadForm) error {
	name := p.FormName()
	limit := int64(transfers.MaxNameBytes)
	if name == "manifest" {
		limit = maxUploadPayload
	}
	b, err := io.ReadAll(io.LimitReader(p, limit+1))
	if err != nil {
		return cairn.Invalid(name, "could not be read")
	}
	if int64(len(b)) > limit {
		return cairn.Invalid(name, fmt.Sprintf("must be at most %d bytes", limit))
	}
	v := string(b)
	if !textOK(v) {
		return cairn.Invalid(name, "must be UTF-8 without NUL characters")
	}
	switch name {
	case "destination":
		form.destination = v
	case "conflict":
		form.conflict = v
	case "manifest":
		var m struct {
			Directories []string `json:"directories"`
		}
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return cairn.Invalid("manifest", `must be JSON {"directories": ["rel/dir", ...]}`)
		}
		for _, d := range m.Directories {
			clean, ok := transfers.CleanRelative(d)
			if !ok {
				return cairn.Invalid("manifest", fmt.Sprintf("directory %q must be relative to destination, without .., NUL or backslashes", d))
			}
			form.directories = append(form.directories, clean)
		}
	}
	return nil
}

type fileDownloadRequest struct {
	Paths []string `json:"paths" limit:"max=1000"`
}

func (q *fileDownloadRequest) validate() error {
	if len(q.Paths) == 0 || len(q.Paths) > transfers.MaxPaths {
		return cairn.Invalid("paths", fmt.Sprintf("must name 1 to %d absolute paths", transfers.MaxPaths))
	}
	for _, p := range q.Paths {
		if err := checkAbsolute("paths", p); err != nil {
			return err
		}
	}
	return nil
}

func (s *transfersAPI) fileDownload(r *http.Request, req fileDownloadRequest) (fileTransferJSON, error) {
	ctx := r.Context()
	target, err := s.transferTarget(ctx, pathParam(r, "hostname"))
	if err != nil {
		return fileTransferJSON{}, err
	}
	id := cairn.TransferID(uuid.NewString())
	if _, err := s.Transfers.NewDownload(ctx, id, target, principal(ctx).Username, req.Paths); err != nil {
		return fileTransferJSON{}, err
	}
	payload, err := json.Marshal(proto.TransferRequest{Action: proto.FileActionDownload, TransferID: string(id), Paths: req.Paths})
	if err != nil {
		return fileTransferJSON{}, err
	}
	summary := "Download " + req.Paths[0]
	if len(req.Paths) > 1 {
		summary = fmt.Sprintf("Download %d paths", len(req.Paths))
	}
	if err := s.TransferStarter.Start(ctx, workflows.FileTransferInput{TransferID: id, Target: target, Request: payload,
		Kind: "file_download", Summary: summary, Actor: principal(ctx).Username}); err != nil {
		_, _ = s.Transfers.Finish(context.WithoutCancel(ctx), id, transfers.StateFailed, cairn.ECodeUnavailable, "the transfer could not start")
		return fileTransferJSON{}, err
	}
	snap, err := s.Transfers.Get(ctx, id)
	return newFileTransferJSON(snap), err
}

func (s *transfersAPI) transferStatus(r *http.Request) (fileTransferJSON, error) {
	snap, err := s.scopedTransfer(r)
	return newFileTransferJSON(snap), err
}

func (s *transfersAPI) transferCancel(r *http.Request, _ struct{}) (fileTransferJSON, error) {
	snap, err := s.scopedTransfer(r)
	if err != nil {
		return fileTransferJSON{}, err
	}
	ctx := r.Context()
	changed, err := s.Transfers.Cancel(ctx, snap.Transfer.ID, principal(ctx).Username)
	if err != nil {
		return fileTransferJSON{}, err
	}
	if changed {
		s.transferChanged(ctx, snap.Transfer.ID)
	}
	snap, err = s.Transfers.Get(ctx, snap.Transfer.ID)
	return newFileTransferJSON(snap), err
}

// transferChanged wakes the transfer's workflow; it re-reads the record
// within a minute anyway, so a failed signal is only logged.
func (s *transfersAPI) transferChanged(ctx context.Context, id cairn.TransferID) {
	if err := s.TransferStarter.Changed(context.WithoutCancel(ctx), id); err != nil {
		s.ctxLog(ctx).Warn("signal a file transfer", "transfer_id", id, "err", err)
	}
}

func (s *transfersAPI) transferContent(w http.ResponseWriter, r *http.Request) {
	snap, err := s.scopedTransfer(r)
	if err == nil {
		switch t := snap.Transfer; {
		case t.Direction != transfers.DirectionDownload:
			err = cairn.Errorf(transfers.ECodeTransferNotFound, "an upload has no content to fetch")
		case t.State != transfers.StateCompleted:
			err = cairn.Errorf(transfers.ECodeTransferNotReady, "the transfer is %s; its content is there once it completed", t.State)
		case t.PurgedAt != nil:
			err = cairn.Errorf(transfers.ECodeContentExpired, "the content was deleted after its retention period")
		}
	}
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	// One content type for every artifact: the name (and .zip) says
	// what it is, and the browser saves it either way.
	s.streamItem(w, r, snap.Transfer.ID, snap.Items[0], "application/octet-stream", true)
}

// streamItem writes an item with its size, checksum and (for browsers)
// file name. A failure mid-stream aborts the connection, so the client
// sees a short body rather than a wrong one.
func (s *transfersAPI) streamItem(w http.ResponseWriter, r *http.Request, id cairn.TransferID, item db.FileTransferItem, ctype string, attachment bool) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.FormatInt(item.Size, 10))
	h.Set(proto.HeaderContentSHA256, item.Sha256)
	h.Set("Cache-Control", "no-store")
	if attachment {
		name := transfers.CleanContentName(path.Base(item.Name))
		if name == "" || name == "." || name == "/" {
			name = "download"
		}
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(name))
	}
	extendDeadlines(w)
	w.WriteHeader(http.StatusOK)
	if err := s.Transfers.WriteItem(r.Context(), deadlineWriter{w}, id, item); err != nil {
		if r.Context().Err() == nil {
			s.reqLog(r).Error("stream transfer content", "transfer_id", id, "item_id", item.ItemID, "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// extendDeadlines lifts the server's whole-request read and write
// timeouts for a stream; deadlineWriter/Reader then keep a per-chunk idle
// deadline, so a stalled peer is still dropped.
func extendDeadlines(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(streamIdle))
	_ = rc.SetWriteDeadline(time.Now().Add(streamIdle))
}

const streamIdle = 2 * time.Minute

type deadlineWriter struct{ w http.ResponseWriter }

func (d deadlineWriter) Write(p []byte) (int, error) {
	_ = http.NewResponseController(d.w).SetWriteDeadline(time.Now().Add(streamIdle))
	return d.w.Write(p)
}

type deadlineReader struct {
	r io.Reader
	w http.ResponseWriter
}

func (d deadlineReader) Read(p []byte) (int, error) {
	_ = http.NewResponseController(d.w).SetReadDeadline(time.Now().Add(streamIdle))
	return d.r.Read(p)
}

// ---- agent callbacks ----

// deviceTransfer is a transfer of the calling device (another device's is
// transfer_not_found).
func (s *transfersAPI) deviceTransfer(r *http.Request) (transfers.Snapshot, error) {
	id := cairn.TransferID(pathParam(r, "transfer_id"))
	if err := checkTransferID(id); err != nil {
		return transfers.Snapshot{}, err
	}
	return s.Transfers.ForDevice(r.Context(), deviceFrom(r.Context()).GUID, id)
}

func (s *transfersAPI) agentUploadItem(w http.ResponseWriter, r *http.Request) {
	snap, err := s.deviceTransfer(r)
	var item db.FileTransferItem
	if err == nil {
		err = agentMayFetch(snap)
	}
	if err == nil {
		n, perr := strconv.ParseInt(pathParam(r, "item_id"), 10, 32)
		found := false
		for _, it := range snap.Items {
			if perr == nil && int64(it.ItemID) == n {
				item, found = it, true
			}
		}
		if !found {
			err = cairn.Errorf(transfers.ECodeTransferNotFound, "no such item in this transfer")
		}
	}
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	s.streamItem(w, r, snap.Transfer.ID, item, "application/octet-stream", false)
}

func agentMayFetch(snap transfers.Snapshot) error {
	t := snap.Transfer
	switch {
	case t.Direction != transfers.DirectionUpload:
		return cairn.Errorf(transfers.ECodeTransferNotFound, "a download has no items to fetch")
	case t.State == transfers.StateCancelled:
		return cairn.Errorf(transfers.ECodeTransferCancelled, "the transfer was cancelled")
	case transfers.Terminal(t.State):
		return cairn.Errorf(transfers.ECodeTransferEnded, "the transfer already ended (%s)", t.State)
	}
	return nil
}

func agentStatus(snap transfers.Snapshot) proto.TransferStatus {
	out := proto.TransferStatus{State: snap.Transfer.State, CancelRequested: snap.Transfer.CancelRequested,
		Items: make([]proto.TransferItemStatus, len(snap.Items))}
	for i, it := range snap.Items {
		out.Items[i] = proto.TransferItemStatus{ItemID: it.ItemID, State: it.State}
	}
	return out
}

func (s *transfersAPI) agentTransferStatus(r *http.Request) (proto.TransferStatus, error) {
	snap, err := s.deviceTransfer(r)
	return agentStatus(snap), err
}

func (s *transfersAPI) agentTransferProgress(r *http.Request, req proto.TransferProgress) (proto.TransferStatus, error) {
	ctx := r.Context()
	id := cairn.TransferID(pathParam(r, "transfer_id"))
	if err := checkTransferID(id); err != nil {
		return proto.TransferStatus{}, err
	}
	p := transfers.Progress{ItemID: req.ItemID, BytesDone: req.BytesDone, BytesTotal: req.BytesTotal, State: req.State}
	switch req.State {
	case "", transfers.ItemRunning, transfers.ItemCompleted, transfers.ItemSkipped, transfers.ItemFailed:
	default:
		return proto.TransferStatus{}, cairn.Invalid("state", "must be running, completed, skipped or failed")
	}
	if req.ItemID < 0 || req.BytesDone < 0 {
		return proto.TransferStatus{}, cairn.Invalid("item_id", "item_id and bytes_done must not be negative")
	}
	if req.Error != nil {
		p.Code, p.Message = req.Error.Code, req.Error.Message
		if !textOK(p.Code) || !textOK(p.Message) || len(p.Code) > 64 {
			return proto.TransferStatus{}, cairn.Invalid("error", "must be a short code and a UTF-8 message")
		}
	}
	ended, err := s.Transfers.ReportProgress(ctx, deviceFrom(ctx).GUID, id, p)
	if err != nil {
		return proto.TransferStatus{}, err
	}
	if ended {
		s.transferChanged(ctx, id)
	}
	snap, err := s.Transfers.Get(ctx, id)
	return agentStatus(snap), err
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

func (s *transfersAPI) agentTransferContent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := cairn.TransferID(pathParam(r, "transfer_id"))
	// The SHA-256 comes as a header, or as a trailer (declared in the
	// Trailer header) when the agent computes it while streaming.
	sum := r.Header.Get(proto.HeaderContentSHA256)
	_, inTrailer := r.Trailer[http.CanonicalHeaderKey(proto.HeaderContentSHA256)]
	// Bidi and control characters are dropped before the name is checked,
	// stored or put in a Content-Disposition.
	name := transfers.CleanContentName(r.Header.Get(proto.HeaderContentName))
	err := checkTransferID(id)
	switch {
	case err != nil:
	case !hexSHA256.MatchString(sum) && !(sum == "" && inTrailer):
		err = cairn.Invalid(proto.HeaderContentSHA256, "must be the content's SHA-256 in hex (as a header or a trailer)")
	case name == "" || len(name) > 255 || !textOK(name) || strings.ContainsAny(name, `/\`):
		err = cairn.Invalid(proto.HeaderContentName, "must be a file name without separators, at most 255 bytes")
	}
	if err == nil {
		extendDeadlines(w)
		body := http.MaxBytesReader(w, r.Body, s.Transfers.MaxBytes()+1)
		want := func() string {
			if sum != "" {
				return sum
			}
			return r.Trailer.Get(proto.HeaderContentSHA256)
		}
		err = s.Transfers.ReceiveContent(ctx, deviceFrom(ctx).GUID, id, name, want, deadlineReader{r: body, w: w})
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err = cairn.Errorf(transfers.ECodeUploadTooLarge, "the content is larger than the Engine's limit of %d bytes", s.Transfers.MaxBytes())
		}
		if err == nil || cairn.IsCode(err, transfers.ECodeChecksumMismatch) || cairn.IsCode(err, transfers.ECodeUploadTooLarge) ||
			cairn.IsCode(err, cairn.ECodeTransferQuotaExceeded) || cairn.IsCode(err, cairn.ECodeInsufficientStorage) {
			s.transferChanged(ctx, id)
		}
	}
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	snap, err := s.Transfers.Get(ctx, id)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	writeJSON(w, http.StatusOK, agentStatus(snap))
}

// transfersEnded tells the workflows of the live transfers a trust action
// or a site move ended (issue 21 item 6). The records are cancelled
// already, and each workflow re-reads its own within half a minute, so a
// failure here is only logged.
func (s *transfersAPI) transfersEnded(ctx context.Context, ids []cairn.TransferID, purged bool) {
	if len(ids) == 0 {
		return
	}
	starter := s.TransferStarter
	if starter.Client == nil {
		starter.Client = s.Temporal
	}
	if starter.Client == nil {
		return
	}
	if err := starter.Ended(context.WithoutCancel(ctx), ids, purged); err != nil {
		s.ctxLog(ctx).Warn("tell ended file transfers", "err", err)
	}
}
