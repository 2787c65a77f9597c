package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
)

// filesCapability is the file manager: listing, reading and changing a
// device's files through DeviceOperation.
var filesCapability = Capability{
	Name: "files",
	Codes: []cairn.Code{
		{ID: proto.CodeFilePathNotAbsolute, Status: http.StatusBadRequest, Agent: true},
		{ID: proto.CodeFilePathInvalid, Status: http.StatusBadRequest, Agent: true},
		{ID: proto.CodeFilePathNotFound, Status: http.StatusNotFound, Agent: true},
		{ID: proto.CodeFileNotDirectory, Status: http.StatusConflict, Agent: true},
		{ID: proto.CodeFileNotFile, Status: http.StatusConflict, Agent: true},
		{ID: proto.CodeFileTooLarge, Status: http.StatusRequestEntityTooLarge, Agent: true},
		{ID: proto.CodeFileBinary, Status: http.StatusUnprocessableEntity, Agent: true},
		{ID: proto.CodePathExists, Status: http.StatusConflict, Agent: true},
	},
	API:      func(*Engine) api.Area { return api.FilesArea },
	AgentOps: []string{proto.EventFileManagement},
}
