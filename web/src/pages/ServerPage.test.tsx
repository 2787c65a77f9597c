import { afterEach, describe, expect, it, vi } from 'vitest';
import { screen, within } from '@testing-library/react';
import { ADMIN, fakeEngine } from '../test/fakeEngine';
import { renderWithProviders } from '../test/render';
import { SessionContext } from '../auth/session';
import ServerPage, { workerRows } from './ServerPage';

afterEach(() => vi.unstubAllGlobals());

const engineWorker = {
  name: 'Engine',
  task_queue: 'engine',
  state: 'running',
  local: true,
  pollers: [],
  recent_workflows: 2,
  running_workflows: 1,
  recent_workflow_runs: [],
};
const siteWorker = {
  site_id: 1,
  name: 'Head office',
  site_worker_slug: 'head-office',
  task_queue: 'site:head-office',
  state: 'failed',
  local: true,
  error: 'poller crashed',
  pollers: [{ identity: '42@host', last_access_time: '2026-11-21T08:00:00Z' }],
  total_devices: 3,
  online_devices: 2,
  connected_agents: 1,
  assigned_work: { operations_running: 1, operations_queued: 2, jobs_running: 0, jobs_queued: 1 },
  recent_workflows: null,
  running_workflows: 4,
  temporal_ui_url: 'http://temporal.test/namespaces/default/workflows?query=x',
  recent_workflow_runs: [
    {
      workflow_id: 'tunnel:g-1',
      type: 'TunnelEstablish',
      status: 'completed' as const,
      start_time: '2026-11-29T06:00:00Z',
      temporal_ui_url: 'http://temporal.test/namespaces/default/workflows/tunnel:g-1/run-1',
    },
  ],
};

describe('workerRows', () => {
  it('puts the Engine first, then the sites', () => {
    const rows = workerRows({ engine: engineWorker, sites: [siteWorker] });
    expect(rows.map((r) => [r.kind, r.label, r.task_queue])).toEqual([
      ['engine', 'Engine', 'engine'],
      ['site', 'Head office', 'site:head-office'],
    ]);
    expect(workerRows(undefined)).toEqual([]);
    expect(workerRows({ engine: null, sites: null })).toEqual([]);
  });
});

describe('ServerPage', () => {
  it('shows each worker with its state and counts, and a dash for what the Engine does not report', async () => {
    const engine = fakeEngine({ 'GET /api/server/workers': { body: { engine: engineWorker, sites: [siteWorker] } } });
    renderWithProviders(
      <SessionContext.Provider value={{ user: ADMIN, signOut: async () => {} }}>
        <ServerPage />
      </SessionContext.Provider>,
    );
    const siteRow = (await screen.findByText('site:head-office')).closest('.ag-row') as HTMLElement;
    expect(within(siteRow).getByText('failed')).toBeInTheDocument();
    expect(siteRow.querySelector('[col-id="total_devices"]')).toHaveTextContent('3');
    expect(siteRow.querySelector('[col-id="online_devices"]')).toHaveTextContent('2');
    expect(siteRow.querySelector('[col-id="connected_agents"]')).toHaveTextContent('1');
    expect(siteRow.querySelector('[col-id="assigned_work"]')).toHaveTextContent('ops 1 running, 2 queued · jobs 0 running, 1 queued');
    expect(siteRow.querySelector('[col-id="running_workflows"]')).toHaveTextContent('4');
    expect(within(siteRow).getByRole('link', { name: 'Open' })).toHaveAttribute('href', siteWorker.temporal_ui_url);
    expect(within(siteRow).getByRole('link', { name: 'TunnelEstablish (completed)' })).toHaveAttribute(
      'href',
      'http://temporal.test/namespaces/default/workflows/tunnel:g-1/run-1',
    );
    expect(siteRow.querySelector('[col-id="recent_workflows"]')).toHaveTextContent('—');
    expect(siteRow.querySelector('[col-id="pollers"]')).toHaveTextContent('1');
    expect(screen.getByText('engine')).toBeInTheDocument();
    expect(engine.callsTo('GET', '/api/server/workers')).toHaveLength(1);
  });

  it('explains a 403 for operators who are not administrators', async () => {
    fakeEngine({ 'GET /api/server/workers': { status: 403, body: { error: 'forbidden', message: 'administrators only' } } });
    renderWithProviders(
      <SessionContext.Provider value={{ user: { ...ADMIN, role: 'operator' }, signOut: async () => {} }}>
        <ServerPage />
      </SessionContext.Provider>,
    );
    expect(await screen.findByText('administrators only')).toBeInTheDocument();
    expect(screen.getByText('Not allowed')).toBeInTheDocument();
  });
});
