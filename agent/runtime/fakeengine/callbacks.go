package fakeengine

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The Device callbacks: status, heartbeat, details and the realtime route.

func (e *Engine) status(w http.ResponseWriter, r *http.Request) {
	var s proto.Status
	if !decode(w, r, &s) {
		return
	}
	e.mu.Lock()
	delay := e.statusDelay
	e.mu.Unlock()
	time.Sleep(delay) // the status is recorded when it completes
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.device(w, r) == nil {
		return
	}
	e.event("status:" + s.Phase)
	e.statuses = append(e.statuses, s)
	w.WriteHeader(http.StatusNoContent)
}

func (e *Engine) heartbeat(w http.ResponseWriter, r *http.Request) {
	var hb proto.Heartbeat
	if !decode(w, r, &hb) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.device(w, r) == nil {
		return
	}
	e.event("heartbeat")
	e.heartbeats = append(e.heartbeats, HeartbeatRecord{At: time.Now(), Body: hb})
	resp := proto.HeartbeatResponse{ServerTime: time.Now().UTC(), IntervalSeconds: e.hbInterval, DetailsWanted: e.hbDetails,
		MetadataFieldAcks: []proto.MetadataAck{}, ScriptSigning: e.scriptTrust}
	if e.ackMetadata {
		for _, m := range hb.MetadataFields {
			resp.MetadataFieldAcks = append(resp.MetadataFieldAcks, proto.MetadataAck{FieldNumber: m.FieldNumber, ModifiedAt: m.ModifiedAt})
		}
	}
	if e.metadataRev > hb.MetadataRevision {
		resp.MetadataRevision = e.metadataRev
		for n, rev := range e.metadataEdit {
			if rev > hb.MetadataRevision {
				resp.MetadataChangedFields = append(resp.MetadataChangedFields, n)
			}
		}
		slices.Sort(resp.MetadataChangedFields)
	}
	writeJSON(w, http.StatusOK, resp)
}

// metadataRead answers GET /api/agent/metadata/<n> from SetMetadataValue.
func (e *Engine) metadataRead(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.device(w, r) == nil {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, proto.Error{Code: "validation_failed", Message: "bad field number"})
		return
	}
	e.event("metadata:" + r.PathValue("n"))
	if e.metadataFail[n] {
		writeJSON(w, http.StatusServiceUnavailable, proto.Error{Code: "unavailable", Message: "try again"})
		return
	}
	v, ok := e.metadata[n]
	if !ok {
		v = proto.MetadataFieldValue{FieldNumber: n}
	}
	writeJSON(w, http.StatusOK, v)
}

func (e *Engine) postDetails(w http.ResponseWriter, r *http.Request) {
	var d proto.Details
	if !decode(w, r, &d) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.device(w, r) == nil {
		return
	}
	e.event("details")
	e.details = append(e.details, d)
	writeJSON(w, http.StatusOK, proto.DetailsResponse{Changed: true})
}

func (e *Engine) route(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.device(w, r) == nil {
		return
	}
	e.event("route")
	writeJSON(w, http.StatusOK, proto.Route{URL: "ws://" + r.Host + proto.PathRealtimeWS, SiteSlug: "test", Worker: "site:test"})
}
