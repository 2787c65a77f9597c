import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import Button from '@mui/material/Button';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import MenuItem from '@mui/material/MenuItem';
import Switch from '@mui/material/Switch';
import TextField from '@mui/material/TextField';
import ToggleButton from '@mui/material/ToggleButton';
import ToggleButtonGroup from '@mui/material/ToggleButtonGroup';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import CheckIcon from '@mui/icons-material/Check';
import ContentCopyIcon from '@mui/icons-material/ContentCopy';
import { sites } from '../../api/endpoints';
import type { AgentPlatform, EnrollmentCode, Site } from '../../api/types';
import { ErrorAlert } from '../../components/ErrorAlert';
import { SITES_QUERY } from '../SiteDialogs';
import { codeLabel, useCopy } from './shared';

export const CA_PATH = '/api/tls/ca.pem';

/** Shell-quotes a value when it needs it. */
const q = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

export interface CommandInput {
  baseUrl: string;
  code: string;
  pinCA: boolean;
}

export const PLATFORMS: { id: AgentPlatform; label: string }[] = [
  { id: 'linux-amd64', label: 'Linux' },
  { id: 'windows-amd64', label: 'Windows' },
];

/** A PowerShell single-quoted string. */
const ps = (v: string) => `'${v.replace(/'/g, "''")}'`;

export interface OneLinerInput {
  platform: AgentPlatform;
  /** The site's signed install link for the platform. */
  linkUrl: string;
  baseUrl: string;
  code: string;
  pinCA: boolean;
}

/**
 * The one-line installer: download the agent through the signed link to a
 * fresh temporary file, make it executable and run `cairn-agent install`
 * with the server and code (it enrolls, waits for approval and installs the
 * service). The Engine builds the same line (installlinks.Command) for
 * install_command; this one adds the chosen code and the CA pin.
 */
export function oneLiner({ platform, linkUrl, baseUrl, code, pinCA }: OneLinerInput): string {
  const base = baseUrl.replace(/\/+$/, '');
  if (platform.startsWith('windows-')) {
    return (
      "$f = Join-Path $env:TEMP ('cairn-agent-' + [guid]::NewGuid() + '.exe'); " +
      `Invoke-WebRequest -UseBasicParsing -Uri ${ps(linkUrl)} -OutFile $f; ` +
      `& $f install --server ${ps(base)} --code ${ps(code)}`
    );
  }
  const cacert = pinCA ? ' --cacert ca.pem' : '';
  const cafile = pinCA ? ' --ca-file ca.pem' : '';
  return (
    `f=$(mktemp) && curl -fsSL${cacert} -o "$f" ${q(linkUrl)} && chmod 0755 "$f" && ` +
    `sudo "$f" install --server ${q(base)} --code ${q(code)}${cafile} && rm -f "$f"`
  );
}

/** The Linux enrollment steps, one shell command per entry. */
export function installCommands({ baseUrl, code, pinCA }: CommandInput): { caDownload: string[]; enroll: string[] } {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    caDownload: pinCA
      ? [
          // -k: the CA is not trusted yet; its fingerprint is checked by hand below.
          `curl -fsSk -o ca.pem ${q(`${base}${CA_PATH}`)}`,
          'openssl x509 -in ca.pem -noout -fingerprint -sha256',
        ]
      : [],
    enroll: [
      `sudo cairn-agent enroll --server ${q(base)} --code ${q(code)}${pinCA ? ' --ca-file ca.pem' : ''}`,
      'sudo cairn-agent install',
    ],
  };
}

function CommandBlock({ id, lines, label }: { id: string; lines: string[]; label: string }) {
  const { copied, copy } = useCopy();
  const text = lines.join('\n');
  return (
    <Box sx={{ position: 'relative', mb: 1.5 }}>
      <Box
        component="pre"
        aria-label={label}
        data-testid={`commands-${id}`}
        sx={{
          m: 0,
          p: 1.25,
          pr: 5,
          bgcolor: '#0f172a',
          color: '#e2e8f0',
          borderRadius: 1,
          fontSize: 12.5,
          fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
          whiteSpace: 'pre-wrap',
          overflowWrap: 'anywhere',
        }}
      >
        {text}
      </Box>
      <Tooltip title={copied === id ? 'Copied' : 'Copy'}>
        <IconButton
          size="small"
          aria-label={`Copy ${label.toLowerCase()}`}
          onClick={() => void copy(id, text)}
          sx={{ position: 'absolute', top: 4, right: 4, color: '#cbd5e1' }}
        >
          {copied === id ? <CheckIcon fontSize="small" /> : <ContentCopyIcon fontSize="small" />}
        </IconButton>
      </Tooltip>
    </Box>
  );
}

function LinkInfo({ site, platform, canEdit }: { site: Site; platform: AgentPlatform; canEdit: boolean }) {
  const queryClient = useQueryClient();
  const link = site.install_links?.[platform];
  const revoke = useMutation({
    mutationFn: () => sites.revokeInstallLink(site.site_id, platform),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: SITES_QUERY }),
  });
  if (!link) return null;
  return (
    <Box sx={{ display: 'flex', gap: 1.5, alignItems: 'center', flexWrap: 'wrap', mb: 1 }}>
      <Typography variant="caption" color="text.secondary" data-testid="install-link-info">
        Agent build {link.build_id} · link valid until {new Date(link.expires_at).toLocaleString()} · downloaded{' '}
        {link.download_count} {link.download_count === 1 ? 'time' : 'times'}
      </Typography>
      {canEdit && (
        <Button size="small" onClick={() => revoke.mutate()} disabled={revoke.isPending}>
          Revoke link
        </Button>
      )}
      {revoke.isSuccess && (
        <Typography variant="caption" color="success.main" data-testid="install-link-revoked">
          Link replaced: the previous one no longer downloads.
        </Typography>
      )}
      <ErrorAlert error={revoke.error} />
    </Box>
  );
}

/**
 * Install commands for an agent with one of the site's usable codes: the
 * one-liner through the site's signed install link for the chosen
 * platform, or, when the Engine has no agent builds, the steps with a
 * binary copied over by hand.
 */
export function InstallCommands({ site, codes, canEdit }: { site: Site; codes: EnrollmentCode[]; canEdit: boolean }) {
  const baseUrl = site.public_base_url;
  const usable = codes.filter((c) => c.status === 'active' && c.code);
  const [chosen, setChosen] = useState<number | null>(null);
  const code = usable.find((c) => c.id === chosen) ?? usable[0] ?? null;
  const https = (baseUrl ?? '').startsWith('https://');
  const [pinCA, setPinCA] = useState(https);
  const available = PLATFORMS.filter((p) => site.install_links?.[p.id]);
  const [picked, setPicked] = useState<AgentPlatform>('linux-amd64');
  const platform = available.find((p) => p.id === picked)?.id ?? available[0]?.id ?? null;
  const link = platform ? site.install_links?.[platform] : undefined;
  const windows = platform === 'windows-amd64';
  const base = baseUrl || '<engine-url>';
  const cmds = installCommands({ baseUrl: base, code: code?.code ?? '<code>', pinCA });
  const line =
    platform && link ? oneLiner({ platform, linkUrl: link.url, baseUrl: base, code: code?.code ?? '<code>', pinCA: pinCA && !windows }) : null;
  const showCA = pinCA && !windows;

  return (
    <Box>
      {!baseUrl && (
        <Alert severity="warning" variant="outlined" sx={{ mb: 1.5 }}>
          The Engine did not report this site’s public URL. Replace <code>&lt;engine-url&gt;</code> with the address agents
          reach the Engine at (the Engine’s <code>CAIRN_PUBLIC_URL</code>).
        </Alert>
      )}
      {!code && (
        <Alert severity="info" variant="outlined" sx={{ mb: 1.5 }} data-testid="commands-need-code">
          Create an active enrollment code above; the commands then carry it.
        </Alert>
      )}
      <Box sx={{ display: 'flex', gap: 2, alignItems: 'center', flexWrap: 'wrap', mb: 1.5 }}>
        {available.length > 0 && (
          <ToggleButtonGroup
            size="small"
            exclusive
            value={platform}
            onChange={(_, v: AgentPlatform | null) => v && setPicked(v)}
            aria-label="Platform"
          >
            {available.map((p) => (
              <ToggleButton key={p.id} value={p.id}>
                {p.label}
              </ToggleButton>
            ))}
          </ToggleButtonGroup>
        )}
        {usable.length > 1 && (
          <TextField
            select
            label="Code in the commands"
            value={code?.id ?? ''}
            onChange={(e) => setChosen(Number(e.target.value))}
            sx={{ minWidth: 220 }}
          >
            {usable.map((c) => (
              <MenuItem key={c.id} value={c.id}>
                {codeLabel(c)}… ({c.max_uses - c.uses} uses left)
              </MenuItem>
            ))}
          </TextField>
        )}
        {!windows && (
          <FormControlLabel
            control={<Switch checked={pinCA} onChange={(e) => setPinCA(e.target.checked)} />}
            label="Pin the Engine’s local CA"
          />
        )}
      </Box>
      {showCA && (
        <>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 0.75 }}>
            1. On the device, fetch the Engine’s CA certificate (or{' '}
            <Link href={CA_PATH} download="ca.pem">
              download ca.pem
            </Link>{' '}
            here and copy it over). Compare its fingerprint with the one the Engine printed when it started.
          </Typography>
          <CommandBlock id="ca" lines={cmds.caDownload} label="CA download commands" />
        </>
      )}
      {line && platform ? (
        <>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 0.75 }}>
            {showCA ? '2. ' : ''}
            {windows ? 'In an elevated PowerShell' : 'In a shell'} on the device: download the agent through this site’s
            signed link, enroll, then install and start the service. The device then waits for approval below (unless
            auto-approval is on).
          </Typography>
          <CommandBlock id="install" lines={[line]} label="Install command" />
          <LinkInfo site={site} platform={platform} canEdit={canEdit} />
          {windows && (
            <Alert severity="info" variant="outlined" sx={{ mb: 1 }} data-testid="windows-note">
              Windows must trust the Engine’s certificate (a provided certificate, or the local CA imported). Installing
              the Windows service is not available in this release yet: the command downloads the agent and enrolls it,
              then stops at the service step.
            </Alert>
          )}
        </>
      ) : (
        <>
          <Alert severity="info" variant="outlined" sx={{ mb: 1 }} data-testid="commands-no-build">
            This Engine has no agent builds to hand out (its <code>CAIRN_AGENT_ARTIFACTS</code> directory is empty): copy
            the <code>cairn-agent</code> binary of this Cairn release to the Linux device and run these there.
          </Alert>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 0.75 }}>
            {showCA ? '2. ' : ''}Enroll, then install and start the service. The device then waits for approval below
            {' '}(unless auto-approval is on).
          </Typography>
          <CommandBlock id="enroll" lines={cmds.enroll} label="Enroll commands" />
        </>
      )}
      {!pinCA && https && !windows && (
        <Typography variant="caption" color="text.secondary" component="p">
          Without a pinned CA the agent checks the Engine’s certificate against the system’s public CAs: turn this off
          only when the Engine uses a provided certificate.
        </Typography>
      )}
    </Box>
  );
}
