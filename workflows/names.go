// Package workflows holds Cairn's deterministic Temporal workflow code. This
// file names everything other processes refer to: task queues, search
// attributes and workflow IDs. Change none of them once a release used it.
package workflows

import "strings"

// EngineTaskQueue runs Engine-wide work (enrollment approvals, ...).
const EngineTaskQueue = "engine"

// siteQueuePrefix prefixes every site worker's task queue.
const siteQueuePrefix = "site:"

// SiteTaskQueue is the task queue of the site with this slug.
func SiteTaskQueue(slug string) string { return siteQueuePrefix + slug }

// SiteSlugFromQueue returns the slug of a site task queue.
func SiteSlugFromQueue(queue string) (string, bool) {
	return strings.CutPrefix(queue, siteQueuePrefix)
}

// Custom search attributes (Keyword), registered at start so an SRE can
// filter workflows by device, site or job kind in the Temporal UI.
const (
	SearchAttrDeviceGUID = "DeviceGUID"
	SearchAttrSiteSlug   = "SiteSlug"
	SearchAttrJobKind    = "JobKind"
)

// SearchAttributes lists the custom search attributes.
var SearchAttributes = []string{SearchAttrDeviceGUID, SearchAttrSiteSlug, SearchAttrJobKind}

// WorkerProbeWorkflowID names a probe of a queue's worker; nonce keeps
// probes distinct while the ID still says what it is.
func WorkerProbeWorkflowID(queue, nonce string) string { return "worker-probe:" + queue + ":" + nonce }
