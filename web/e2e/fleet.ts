import { expect, type APIRequestContext } from '@playwright/test';
import { startAgent, type Agent } from './agent';
import { freshTotp, totp } from './totp';

// Steps several specs share: bootstrap a fresh Engine and sign in (the
// page's context keeps the session cookie; changes through the request
// context carry the bearer token), and enroll a real agent and wait until
// its socket is up.

export async function ok(res: Awaited<ReturnType<APIRequestContext['post']>>, status = 200): Promise<any> {
  expect(res.status(), await res.text()).toBe(status);
  return res.json();
}

/**
 * Bootstraps the Engine at base with the setup code it printed
 * (Engine.setupCode) and signs in; returns the bearer header.
 */
export async function signIn(
  api: APIRequestContext,
  base: string,
  username: string,
  password: string,
  setupCode: string,
): Promise<Record<string, string>> {
  return (await signInWithSecret(api, base, username, password, setupCode)).auth;
}

/**
 * signIn that also returns the administrator's TOTP secret and the last
 * time step the Engine accepted (a later sign-in needs a newer one). The
 * master-cipher passphrase is `${password} passphrase`.
 */
export async function signInWithSecret(
  api: APIRequestContext,
  base: string,
  username: string,
  password: string,
  setupCode: string,
): Promise<{ auth: Record<string, string>; secret: string; usedStep: number }> {
  const setup_code = setupCode;
  await ok(await api.post(`${base}/api/bootstrap/aegis/setup`, { data: { passphrase: `${password} passphrase`, setup_code } }));
  const admin = await ok(await api.post(`${base}/api/bootstrap/admin/setup`, { data: { username, password, setup_code } }));
  const first = totp(admin.mfa.secret);
  await ok(await api.post(`${base}/api/bootstrap/admin/mfa/verify`, { data: { pending_token: admin.pending_token, code: first.code } }));
  const login = await ok(await api.post(`${base}/api/auth/login`, { data: { username, password } }));
  const second = await freshTotp(admin.mfa.secret, first.step);
  const sess = await ok(await api.post(`${base}/api/auth/mfa/verify`, { data: { pending_token: login.pending_token, code: second.code } }));
  return { auth: { Authorization: `Bearer ${sess.token}` }, secret: admin.mfa.secret, usedStep: second.step };
}

/** Creates a site and an enrollment code for it; returns the code. */
export async function siteEnrollmentCode(
  api: APIRequestContext,
  base: string,
  auth: Record<string, string>,
  slug: string,
): Promise<string> {
  const site = await ok(await api.post(`${base}/api/sites`, { headers: auth, data: { name: slug, site_worker_slug: slug } }), 201);
  const code = await ok(await api.post(`${base}/api/admin/enrollment-codes`, { headers: auth, data: { site_id: site.site_id } }), 201);
  return code.code;
}

/** Approves hostname's enrollment once it is pending. */
export async function approveWhenPending(
  api: APIRequestContext,
  base: string,
  auth: Record<string, string>,
  hostname: string,
): Promise<void> {
  let approvalID = '';
  await expect
    .poll(async () => {
      const list = await (await api.get(`${base}/api/admin/device-approvals?status=pending`)).json();
      approvalID = list.approvals.find((a: any) => a.hostname === hostname)?.id ?? '';
      return approvalID;
    }, { timeout: 120_000 })
    .not.toBe('');
  // 200 once the approval workflow has recorded the decision, 202 when it
  // is still recording it after the route's wait (a loaded machine): the
  // workflow keeps the decision either way, and callers wait for the agent.
  const res = await api.post(`${base}/api/admin/device-approvals/${approvalID}/approve`, { headers: auth });
  expect([200, 202], await res.text()).toContain(res.status());
}

/** Waits until hostname's agent is connected with its realtime socket up. */
export async function waitConnected(api: APIRequestContext, base: string, hostname: string): Promise<void> {
  await expect
    .poll(async () => {
      const list = await (await api.get(`${base}/api/devices`)).json();
      const d = list.devices.find((x: any) => x.hostname === hostname);
      return d?.connectivity_status === 'Connected' && d?.agent_socket === true;
    }, { timeout: 120_000 })
    .toBe(true);
}

/** Creates a site, enrolls a real agent into it, approves it and waits until its realtime socket is up. */
export async function enrollConnected(
  api: APIRequestContext,
  base: string,
  auth: Record<string, string>,
  opts: { name: string; hostname: string; slug: string; env?: Record<string, string> },
): Promise<Agent> {
  const code = await siteEnrollmentCode(api, base, auth, opts.slug);
  const agent = await startAgent({ name: opts.name, server: base, code, hostname: opts.hostname, env: opts.env });
  await approveWhenPending(api, base, auth, opts.hostname);
  await agent.enrolled;
  agent.run();
  await waitConnected(api, base, opts.hostname);
  return agent;
}
