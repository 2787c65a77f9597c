package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// fileRoutes browse and change a device's files (SPEC "File management",
// docs/api.md "Files"): each is a file_management_request operation on the
// agent, which enforces the path rules (agent/files); the Engine checks
// the request's shape so bad input is refused before anything starts.
func (s *Server) fileRoutes() []Route {
	const base = "/api/device/files/{hostname}"
	// Each is an operation (operationErrors) the agent may refuse.
	refusals := append([]string{proto.CodeFilePathNotAbsolute, proto.CodeFilePathInvalid, proto.CodeFilePathNotFound,
		proto.CodeFilePathExists, proto.CodeFileNotDirectory, proto.CodeFileNotFile}, operationErrors...)
	return pendableRoutes([]Route{
		{"GET", base + "/roots", AuthToken, getAction(s, s.fileRoots).Errors(operationErrors...), "List a device's file system roots"},
		{"GET", base + "/children", AuthToken, getAction(s, s.fileChildren).Query(queryPath()).Errors(refusals...), "List a folder on a device"},
		{"GET", base + "/text", AuthToken, s.deviceContent(getAction(s, s.fileReadText).Query(queryPath()).Errors(append(refusals, proto.CodeFileTooLarge, proto.CodeFileBinary)...)), "Read a text file on a device"},
		{"POST", base + "/text", AuthToken, jsonAction(s, http.StatusOK, false, s.fileWriteText).Errors(append(refusals, proto.CodeFileTooLarge, proto.CodeFileBinary)...), "Write a text file on a device"},
		{"POST", base + "/mkdir", AuthToken, jsonAction(s, http.StatusOK, false, s.fileMkdir).Errors(refusals...), "Create a folder on a device"},
		{"POST", base + "/rename", AuthToken, jsonAction(s, http.StatusOK, false, s.fileRename).Errors(refusals...), "Rename a file on a device"},
		{"POST", base + "/move", AuthToken, jsonAction(s, http.StatusOK, false, s.fileMove).Errors(refusals...), "Move files on a device"},
		{"POST", base + "/paste", AuthToken, jsonAction(s, http.StatusOK, false, s.filePaste).Errors(refusals...), "Copy files on a device"},
		{"POST", base + "/delete", AuthToken, jsonAction(s, http.StatusOK, false, s.fileDelete).Errors(refusals...), "Delete files on a device"},
		{"POST", base + "/upload/conflicts", AuthToken, jsonAction(s, http.StatusOK, false, s.fileConflicts).Errors(refusals...), "Check an upload for name conflicts"},
	})
}

func queryPath() QueryParam {
	p := queryString("path", "an absolute path on the device")
	p.Required = true
	return p
}

// Bounds of a request (the agent bounds content: proto.MaxTextBytes).
const (
	maxFilePathLen = 4096
	maxFilePaths   = 1000
)

// fileEntryJSON is one directory entry.
type fileEntryJSON struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

type fileRootJSON struct {
	Path  string `json:"path"`
	Type  string `json:"type"`
	Label string `json:"label"`
}

type fileRootsJSON struct {
	Roots []fileRootJSON `json:"roots"`
}

type fileChildrenJSON struct {
	Path      string          `json:"path"`
	Entries   []fileEntryJSON `json:"entries"`
	Truncated bool            `json:"truncated"`
}

type fileTextJSON struct {
	Path       string    `json:"path"`
	Content    string    `json:"content"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

type fileWrittenJSON struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

type fileEntriesJSON struct {
	Entries []fileEntryJSON `json:"entries"`
}

type fileConflictsJSON struct {
	Destination string          `json:"destination"`
	Conflicts   []fileEntryJSON `json:"conflicts"`
}

func entriesJSON(in []proto.FileEntry) []fileEntryJSON {
	out := make([]fileEntryJSON, len(in))
	for i, e := range in {
		out[i] = fileEntryJSON(e)
	}
	return out
}

// checkPath validates an absolute path's shape for either platform (the
// agent applies its own platform's full rules).
func checkPath(v *cairn.Validation, field, p string) {
	switch {
	case p == "":
		v.Add(field, "is required: an absolute path")
	case len(p) > maxFilePathLen:
		v.Add(field, fmt.Sprintf("is at most %d bytes", maxFilePathLen))
	case strings.ContainsRune(p, 0):
		v.Add(field, "may not contain NUL bytes")
	case !absolute(p):
		v.Add(field, "must be absolute (/… on Linux, C:\\… or \\\\server\\share\\… on Windows)")
	}
}

func absolute(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\\`) ||
		(len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/'))
}

func checkPaths(v *cairn.Validation, field string, ps []string) {
	if len(ps) == 0 || len(ps) > maxFilePaths {
		v.Add(field, fmt.Sprintf("is required: 1 to %d absolute paths", maxFilePaths))
		return
	}
	for i, p := range ps {
		checkPath(v, fmt.Sprintf("%s[%d]", field, i), p)
	}
}

// fileOp runs one file_management_request and decodes its answer.
func fileOp[T any](s *Server, r *http.Request, q proto.FileRequest, kind, summary string) (T, error) {
	var out T
	res, err := s.operate(r.Context(), pathParam(r, "hostname"), proto.EventFileManagement, q, kind, summary)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(res.Payload, &out); err != nil {
		return out, fmt.Errorf("decode file %s answer: %w", q.Action, err)
	}
	return out, nil
}

func (s *Server) fileRoots(r *http.Request) (fileRootsJSON, error) {
	res, err := fileOp[proto.FileRoots](s, r, proto.FileRequest{Action: proto.FileActionRoots}, "file_roots", "List file roots")
	if err != nil {
		return fileRootsJSON{}, err
	}
	out := fileRootsJSON{Roots: make([]fileRootJSON, len(res.Roots))}
	for i, rt := range res.Roots {
		out.Roots[i] = fileRootJSON(rt)
	}
	return out, nil
}

func queryFilePath(r *http.Request) (string, error) {
	var v cairn.Validation
	p := r.URL.Query().Get("path")
	checkPath(&v, "path", p)
	return p, v.Err()
}

func (s *Server) fileChildren(r *http.Request) (fileChildrenJSON, error) {
	p, err := queryFilePath(r)
	if err != nil {
		return fileChildrenJSON{}, err
	}
	res, err := fileOp[proto.FileList](s, r, proto.FileRequest{Action: proto.FileActionList, Path: p}, "file_list", "List "+p)
	if err != nil {
		return fileChildrenJSON{}, err
	}
	return fileChildrenJSON{Path: res.Path, Entries: entriesJSON(res.Entries), Truncated: res.Truncated}, nil
}

func (s *Server) fileReadText(r *http.Request) (fileTextJSON, error) {
	p, err := queryFilePath(r)
	if err != nil {
		return fileTextJSON{}, err
	}
	res, err := fileOp[proto.FileText](s, r, proto.FileRequest{Action: proto.FileActionReadText, Path: p}, "file_read", "Open "+p)
	return fileTextJSON(res), err
}

type fileWriteTextRequest struct {
	Path    string `json:"path" limit:"max=4096"`
	Content string `json:"content" limit:"max=524288"`
}

func (q *fileWriteTextRequest) validate() error {
	var v cairn.Validation
	checkPath(&v, "path", q.Path)
	if len(q.Content) > proto.MaxTextBytes {
		v.Add("content", fmt.Sprintf("is at most %d bytes", proto.MaxTextBytes))
	}
	return v.Err()
}

func (s *Server) fileWriteText(r *http.Request, q fileWriteTextRequest) (fileWrittenJSON, error) {
	res, err := fileOp[proto.FileWritten](s, r, proto.FileRequest{Action: proto.FileActionWriteText, Path: q.Path, Content: q.Content},
		"file_write", "Save "+q.Path)
	return fileWrittenJSON(res), err
}

type filePathRequest struct {
	Path string `json:"path" limit:"max=4096"`
}

func (q *filePathRequest) validate() error {
	var v cairn.Validation
	checkPath(&v, "path", q.Path)
	return v.Err()
}

func (s *Server) fileMkdir(r *http.Request, q filePathRequest) (fileEntriesJSON, error) {
	res, err := fileOp[proto.FileEntries](s, r, proto.FileRequest{Action: proto.FileActionMkdir, Path: q.Path}, "file_mkdir", "Create folder "+q.Path)
	return fileEntriesJSON{Entries: entriesJSON(res.Entries)}, err
}

type fileRenameRequest struct {
	Path    string `json:"path" limit:"max=4096"`
	NewName string `json:"new_name" limit:"max=255"`
}

func (q *fileRenameRequest) validate() error {
	var v cairn.Validation
	checkPath(&v, "path", q.Path)
	if q.NewName == "" || q.NewName == "." || q.NewName == ".." || len(q.NewName) > 255 || strings.ContainsAny(q.NewName, "/\\\x00") {
		v.Add("new_name", "is required: a name without path separators, at most 255 bytes")
	}
	return v.Err()
}

func (s *Server) fileRename(r *http.Request, q fileRenameRequest) (fileEntriesJSON, error) {
	res, err := fileOp[proto.FileEntries](s, r, proto.FileRequest{Action: proto.FileActionRename, Path: q.Path, NewName: q.NewName},
		"file_rename", fmt.Sprintf("Rename %s to %s", q.Path, q.NewName))
	return fileEntriesJSON{Entries: entriesJSON(res.Entries)}, err
}

type filePathsRequest struct {
	Paths       []string `json:"paths" limit:"max=1000,itemmax=4096"`
	Destination string   `json:"destination" limit:"max=4096"`
}

func (q *filePathsRequest) validate() error {
	var v cairn.Validation
	checkPaths(&v, "paths", q.Paths)
	checkPath(&v, "destination", q.Destination)
	return v.Err()
}

func (s *Server) fileMove(r *http.Request, q filePathsRequest) (fileEntriesJSON, error) {
	res, err := fileOp[proto.FileEntries](s, r, proto.FileRequest{Action: proto.FileActionMove, Paths: q.Paths, Destination: q.Destination},
		"file_move", fmt.Sprintf("Move %d item(s) to %s", len(q.Paths), q.Destination))
	return fileEntriesJSON{Entries: entriesJSON(res.Entries)}, err
}

func (s *Server) filePaste(r *http.Request, q filePathsRequest) (fileEntriesJSON, error) {
	res, err := fileOp[proto.FileEntries](s, r, proto.FileRequest{Action: proto.FileActionPaste, Paths: q.Paths, Destination: q.Destination},
		"file_copy", fmt.Sprintf("Copy %d item(s) to %s", len(q.Paths), q.Destination))
	return fileEntriesJSON{Entries: entriesJSON(res.Entries)}, err
}

type fileDeleteRequest struct {
	Paths []string `json:"paths" limit:"max=1000,itemmax=4096"`
}

func (q *fileDeleteRequest) validate() error {
	var v cairn.Validation
	checkPaths(&v, "paths", q.Paths)
	return v.Err()
}

func (s *Server) fileDelete(r *http.Request, q fileDeleteRequest) (fileEntriesJSON, error) {
	summary := fmt.Sprintf("Delete %d item(s)", len(q.Paths))
	if len(q.Paths) == 1 {
		summary = "Delete " + q.Paths[0]
	}
	res, err := fileOp[proto.FileEntries](s, r, proto.FileRequest{Action: proto.FileActionDelete, Paths: q.Paths}, "file_delete", summary)
	return fileEntriesJSON{Entries: entriesJSON(res.Entries)}, err
}

type fileConflictsRequest struct {
	Destination string   `json:"destination" limit:"max=4096"`
	Names       []string `json:"names" limit:"max=1000,itemmax=255"`
}

func (q *fileConflictsRequest) validate() error {
	var v cairn.Validation
	checkPath(&v, "destination", q.Destination)
	if len(q.Names) == 0 || len(q.Names) > maxFilePaths {
		v.Add("names", fmt.Sprintf("is required: 1 to %d names", maxFilePaths))
	}
	for i, n := range q.Names {
		if n == "" || n == "." || n == ".." || len(n) > 255 || strings.ContainsAny(n, "/\\\x00") {
			v.Add(fmt.Sprintf("names[%d]", i), "must be a name without path separators, at most 255 bytes")
		}
	}
	return v.Err()
}

func (s *Server) fileConflicts(r *http.Request, q fileConflictsRequest) (fileConflictsJSON, error) {
	res, err := fileOp[proto.FileConflicts](s, r, proto.FileRequest{Action: proto.FileActionConflicts, Destination: q.Destination, Names: q.Names},
		"file_conflicts", "Check upload conflicts in "+q.Destination)
	return fileConflictsJSON{Destination: res.Destination, Conflicts: entriesJSON(res.Conflicts)}, err
}
