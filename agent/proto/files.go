package proto

import "time"

// EventFileManagement asks the agent to act on its file system (SPEC "File
// management"). The payload is a FileRequest whose Action picks the work;
// the answer depends on the action (below). Bulk bytes never travel in an
// answer: text is bounded by MaxTextBytes, listings by MaxListEntries, and
// uploads and downloads go through the transfer callbacks.
const EventFileManagement = "file_management_request"

// File-management actions.
const (
	FileActionRoots     = "roots"      // -> FileRoots
	FileActionList      = "list"       // Path -> FileList
	FileActionReadText  = "read_text"  // Path -> FileText
	FileActionWriteText = "write_text" // Path, Content -> FileWritten
	FileActionMkdir     = "mkdir"      // Path -> FileEntries
	FileActionRename    = "rename"     // Path, NewName -> FileEntries
	FileActionMove      = "move"       // Paths, Destination -> FileEntries
	FileActionPaste     = "paste"      // Paths, Destination (copy, recursive) -> FileEntries
	FileActionDelete    = "delete"     // Paths (recursive) -> FileEntries (what was removed)
	FileActionConflicts = "conflicts"  // Destination, Names -> FileConflicts
)

// File-management refusal codes (the Engine maps them in api/errors.go).
const (
	CodeFilePathNotAbsolute = "path_not_absolute"
	CodeFilePathInvalid     = "path_invalid" // "..", NUL, device files, \\?\ and \\.\ namespaces
	CodeFilePathNotFound    = "path_not_found"
	CodeFilePathExists      = CodePathExists // shared with the registry editor
	CodeFileNotDirectory    = "not_a_directory"
	CodeFileNotFile         = "not_a_file"
	CodeFileTooLarge        = "file_too_large"
	CodeFileBinary          = "file_binary"
)

// Limits of what travels in an operation's answer. Temporal warns above
// 512 KiB per payload and refuses above 2 MiB; text is bounded so that
// its JSON encoding (at most twice the bytes: control characters other
// than tab, newline, carriage return, form feed and escape make a file
// binary) stays far below the refusal.
const (
	MaxTextBytes   = 512 << 10
	MaxListEntries = 2000
)

// FileRequest is the payload of EventFileManagement.
type FileRequest struct {
	Action      string   `json:"action"`
	Path        string   `json:"path,omitempty"`
	Paths       []string `json:"paths,omitempty"`
	Destination string   `json:"destination,omitempty"`
	NewName     string   `json:"new_name,omitempty"`
	Content     string   `json:"content,omitempty"`
	Names       []string `json:"names,omitempty"`
}

// File entry types.
const (
	FileTypeFile    = "file"
	FileTypeDir     = "dir"
	FileTypeSymlink = "symlink"
)

// FileEntry is one directory entry; symbolic links are reported as
// themselves (type "symlink", the link's own size), never followed.
type FileEntry struct {
	Name       string    `json:"name"`
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// FileRoot is where browsing starts: "/" on Linux, each drive on Windows
// (type fixed, removable, network or cdrom).
type FileRoot struct {
	Path  string `json:"path"`
	Type  string `json:"type"`
	Label string `json:"label"`
}

// FileRoots answers FileRoots.
type FileRoots struct {
	Roots []FileRoot `json:"roots"`
}

// FileList answers FileList: directories first, then by name. Truncated
// says the directory holds more than MaxListEntries entries.
type FileList struct {
	Path      string      `json:"path"`
	Entries   []FileEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

// FileText answers FileReadText.
type FileText struct {
	Path       string    `json:"path"`
	Content    string    `json:"content"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
}

// FileWritten answers FileWriteText.
type FileWritten struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// FileEntries answers the mutations with the entries they changed.
type FileEntries struct {
	Entries []FileEntry `json:"entries"`
}

// FileConflicts answers FileConflicts: the names that already exist in
// Destination (compared without case on Windows).
type FileConflicts struct {
	Destination string      `json:"destination"`
	Conflicts   []FileEntry `json:"conflicts"`
}
