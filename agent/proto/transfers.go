package proto

// ---- File transfers (file_management_request actions upload/download) --
//
// The Engine starts a transfer with a file_management_request whose
// action is "upload" or "download"; the agent answers at once
// (TransferAccepted, or an Error naming why it cannot) and then works
// through the transfer callbacks below, outside the operation's answer:
// bulk bytes never travel over the realtime socket or through Temporal.

// File management actions of transfers.
const (
	FileActionUpload   = "upload"
	FileActionDownload = "download"
)

// Transfer callback paths: PathFileTransfers + id + one of the suffixes
// (an upload item adds "/" + item ID).
const (
	PathFileTransfers      = "/api/agent/files/transfers/"
	TransferUploadItem     = "/upload-item/"
	TransferStatusSuffix   = "/status"
	TransferProgressSuffix = "/progress"
	TransferContentSuffix  = "/content"
)

// Headers of transfer content: its SHA-256 (hex) both ways, and the
// download artifact's file name (agent to Engine).
const (
	HeaderContentSHA256 = "X-Content-SHA256"
	HeaderContentName   = "X-Content-Name"
)

// Conflict policies of an upload: what to do with a name that exists.
const (
	ConflictOverwrite = "overwrite"
	ConflictSkip      = "skip"
	ConflictRename    = "rename"
)

// Transfer error codes (besides the file manager's path codes).
const (
	CodeTransferNotFound  = "transfer_not_found"
	CodeTransferCancelled = "transfer_cancelled"
	CodeChecksumMismatch  = "checksum_mismatch"
	CodeUploadTooLarge    = "upload_too_large"
)

// TransferRequest is the payload of an upload or download action.
type TransferRequest struct {
	Action     string `json:"action"`
	TransferID string `json:"transfer_id"`
	// Upload: the absolute directory written into, the conflict policy,
	// the manifest's directories (relative, created even when empty) and
	// the staged items to fetch.
	Destination string         `json:"destination,omitempty"`
	Conflict    string         `json:"conflict,omitempty"`
	Directories []string       `json:"directories,omitempty"`
	Items       []TransferItem `json:"items,omitempty"`
	// Download: the absolute paths; one file is sent as is, anything else
	// as one zip archive.
	Paths []string `json:"paths,omitempty"`
}

// TransferItem is one staged upload file: its name relative to the
// destination ("a/b.txt"), size and SHA-256.
type TransferItem struct {
	ItemID int32  `json:"item_id"`
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// TransferAccepted answers the action: the agent works on the transfer.
type TransferAccepted struct {
	Accepted bool `json:"accepted"`
}

// TransferStatus answers GET .../status: the transfer's state, whether
// it was cancelled, and which items are already done (an agent resuming
// after a restart skips them).
type TransferStatus struct {
	State           string               `json:"state"`
	CancelRequested bool                 `json:"cancel_requested"`
	Items           []TransferItemStatus `json:"items"`
}

// TransferItemStatus is one item's state in TransferStatus.
type TransferItemStatus struct {
	ItemID int32  `json:"item_id"`
	State  string `json:"state"`
}

// TransferProgress is POST .../progress: bytes done of one item, and its
// state once it ended (completed, skipped, failed with Error). ItemID 0
// with state failed fails the whole transfer (nothing could start).
type TransferProgress struct {
	ItemID    int32 `json:"item_id"`
	BytesDone int64 `json:"bytes_done"`
	// BytesTotal (downloads) is what the agent expects to send: the file's
	// size, or the sum of a zip's files; the snapshot's bytes_total.
	BytesTotal int64  `json:"bytes_total,omitempty"`
	State      string `json:"state,omitempty"`
	Error      *Error `json:"error,omitempty"`
}
