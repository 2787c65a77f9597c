-- Onboarding redeploy jobs.

-- name: OnboardingJobInsert :one
INSERT INTO onboarding_jobs (id, device_guid, site_id, enrollment_code_id, operation_id, reason, requested_by, retry_of, expires_at)
VALUES (@id, @device_guid, @site_id, @enrollment_code_id, @operation_id, @reason, @requested_by, sqlc.narg(retry_of), @expires_at)
RETURNING *;

-- name: OnboardingJobGet :one
SELECT * FROM onboarding_jobs WHERE id = @id;

-- name: OnboardingJobList :many
SELECT j.* FROM onboarding_jobs j JOIN devices d ON d.guid = j.device_guid
WHERE (@all_sites::bool OR (d.site_id = ANY(@site_ids::bigint[]) AND j.site_id = ANY(@site_ids::bigint[])))
  AND (sqlc.narg(device_guid)::text IS NULL OR j.device_guid = sqlc.narg(device_guid))
ORDER BY j.created_at DESC, j.id DESC LIMIT @max_rows::int;

-- name: OnboardingJobSetStatus :one
-- Moves an open job; a finished one stays as it is (no row).
UPDATE onboarding_jobs
SET status = @status, last_error = @last_error, updated_at = now(),
    finished_at = CASE WHEN @status IN ('enrolled', 'expired', 'canceled', 'failed') THEN now() ELSE NULL END
WHERE id = @id AND finished_at IS NULL
RETURNING *;

-- name: OnboardingJobEnrolled :one
-- Whether the device enrolled with the job's code: an approval made with
-- it that handed the device its tokens.
SELECT EXISTS (
    SELECT 1 FROM onboarding_jobs j JOIN device_approvals a ON a.enrollment_code_id = j.enrollment_code_id
    WHERE j.id = @id AND a.status = 'enrolled' AND a.device_guid = j.device_guid
)::boolean;

-- name: EnrollmentCodeInsertRedeploy :one
INSERT INTO enrollment_codes (site_id, code_hash, code_sealed, expires_at, max_uses, created_by, redeploy_guid)
VALUES (@site_id, @code_hash, @code_sealed, @expires_at, 1, @created_by, @redeploy_guid)
RETURNING *;

-- name: EnrollmentCodeExpire :exec
-- Ends a redeploy's code early (job canceled or finished).
UPDATE enrollment_codes SET expires_at = least(expires_at, now()) WHERE id = @id;
