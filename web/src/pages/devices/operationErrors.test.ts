import { describe, expect, it } from 'vitest';
import { ApiError } from '../../api/client';
import { operationErrorToast } from './operationErrors';

const err = (status: number, code: string, message = 'engine says no') => new ApiError({ status, code, message });

describe('operationErrorToast', () => {
  it.each([
    [409, 'device_quarantined', 'Device quarantined'],
    [409, 'device_revoked', 'Device revoked'],
    [409, 'agent_socket_missing', 'Agent not connected'],
    [503, 'agent_socket_missing', 'Agent not connected'],
  ])('makes %s %s a plain warning', (status, code, title) => {
    const t = operationErrorToast(err(status, code), 'Stop cron');
    expect(t).toMatchObject({ title, variant: 'warning' });
    expect(t.message).not.toContain('engine says no');
  });

  it('explains a reused PID', () => {
    expect(operationErrorToast(err(409, 'process_mismatch'), 'Terminate x (PID 1)')).toMatchObject({
      title: 'Terminate x (PID 1) failed',
      variant: 'error',
      message: 'The PID now belongs to another program; refresh the list and try again.',
    });
  });

  it("shows the Engine's message for anything else", () => {
    expect(operationErrorToast(err(502, 'failed', 'unit not found'), 'Start x')).toMatchObject({
      title: 'Start x failed',
      variant: 'error',
      message: 'unit not found',
    });
    expect(operationErrorToast(new Error('boom'), 'Start x').message).toBe('boom');
  });
});
