package fakeengine

import (
	"net/http"
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
	writeJSON(w, http.StatusOK, resp)
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
