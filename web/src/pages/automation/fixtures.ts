import type { Assembly, Run, RunResult, ScheduledJob, Workflow } from '../../api/types';

export function assembly(id: number, name: string, extra: Partial<Assembly> = {}): Assembly {
  return {
    id,
    name,
    kind: 'script',
    language: 'bash',
    description: '',
    version: 1,
    parameters: [],
    timeout_seconds: 300,
    run_as: 'system',
    body_sha256: 'ab'.repeat(32),
    created_by: 'admin',
    created_at: '2026-11-21T08:00:00Z',
    updated_by: 'admin',
    updated_at: '2026-11-21T08:00:00Z',
    bundled: false,
    owner_user_id: 1,
    site_scope: null,
    ...extra,
  };
}

export function result(hostname: string, extra: Partial<RunResult> = {}): RunResult {
  return {
    guid: `guid-${hostname}`,
    hostname,
    status: 'pending',
    exit_code: null,
    stdout: '',
    stderr: '',
    stdout_truncated: false,
    stderr_truncated: false,
    error_code: '',
    error_message: '',
    duration_ms: null,
    operation_id: '',
    started_at: null,
    finished_at: null,
    ansible: null,
    ...extra,
  };
}

export function run(runId: string, results: RunResult[], extra: Partial<Run> = {}): Run {
  const counts = { pending: 0, running: 0, succeeded: 0, failed: 0, timed_out: 0, skipped: 0 };
  for (const r of results) (counts as Record<string, number>)[r.status] += 1;
  const finished = results.every((r) => !['pending', 'running'].includes(r.status));
  return {
    run_id: runId,
    kind: 'quick_run',
    status: finished ? (results.every((r) => r.status === 'succeeded') ? 'succeeded' : 'failed') : 'running',
    assembly_id: null,
    assembly_name: '',
    assembly_version: null,
    language: 'bash',
    run_as: 'system',
    timeout_seconds: 300,
    requested_by: 'admin',
    trigger: 'operator',
    scheduled_job_id: null,
    created_at: '2026-11-21T08:00:00Z',
    started_at: '2026-11-21T08:00:01Z',
    finished_at: finished ? '2026-11-21T08:00:03Z' : null,
    counts,
    results,
    ...extra,
  };
}

export function job(id: number, name: string, extra: Partial<ScheduledJob> = {}): ScheduledJob {
  return {
    id,
    name,
    kind: 'script',
    assembly_id: 1,
    assembly_name: 'Disk report',
    assembly_version: null,
    filter_scope_site_ids: null,
    workflow_id: null,
    parameters: {},
    targets: { devices: ['guid-web-1'], sites: [], filters: [] },
    schedule: { type: 'cron', expression: '*/5 * * * *', timezone: 'Europe/Berlin' },
    options: { run_when_online: true, timeout_seconds: 300, stop_on_first_failure: false },
    enabled: true,
    created_by: 'admin',
    created_at: '2026-11-21T08:00:00Z',
    updated_by: 'admin',
    updated_at: '2026-11-21T08:00:00Z',
    next_run_at: '2099-11-21T08:05:00Z',
    last_run: null,
    ...extra,
  };
}

export function workflow(id: number, name: string, extra: Partial<Workflow> = {}): Workflow {
  return {
    id,
    name,
    description: '',
    steps: [
      { id: 's1', name: 'Collect', assembly_id: 1, assembly_version: 1, assembly_sha256: 'ab'.repeat(32), parameters: {}, condition: 'always', timeout_seconds: 60 },
      { id: 's2', name: 'Clean up', assembly_id: 2, assembly_version: 1, assembly_sha256: 'cd'.repeat(32), parameters: {}, condition: 'on_success', timeout_seconds: 60 },
    ],
    owner_user_id: 1,
    site_scope: null,
    created_by: 'admin',
    created_at: '2026-11-21T08:00:00Z',
    updated_at: '2026-11-21T08:00:00Z',
    ...extra,
  };
}
