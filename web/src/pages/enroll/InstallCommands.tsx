import { useState } from 'react';
import Alert from '@mui/material/Alert';
import Box from '@mui/material/Box';
import FormControlLabel from '@mui/material/FormControlLabel';
import IconButton from '@mui/material/IconButton';
import Link from '@mui/material/Link';
import MenuItem from '@mui/material/MenuItem';
import Switch from '@mui/material/Switch';
import TextField from '@mui/material/TextField';
import Tooltip from '@mui/material/Tooltip';
import Typography from '@mui/material/Typography';
import CheckIcon from '@mui/icons-material/Check';
import ContentCopyIcon from '@mui/icons-material/ContentCopy';
import type { EnrollmentCode } from '../../api/types';
import { codeLabel, useCopy } from './shared';

export const CA_PATH = '/api/tls/ca.pem';

/** Shell-quotes a value when it needs it. */
const q = (v: string) => (/^[\w@%+=:,./-]+$/.test(v) ? v : `'${v.replace(/'/g, `'\\''`)}'`);

export interface CommandInput {
  baseUrl: string;
  code: string;
  pinCA: boolean;
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

/** Install commands for a Linux agent with one of the site's usable codes. */
export function InstallCommands({ baseUrl, codes }: { baseUrl: string | undefined; codes: EnrollmentCode[] }) {
  const usable = codes.filter((c) => c.status === 'active' && c.code);
  const [chosen, setChosen] = useState<number | null>(null);
  const code = usable.find((c) => c.id === chosen) ?? usable[0] ?? null;
  const https = (baseUrl ?? '').startsWith('https://');
  const [pinCA, setPinCA] = useState(https);
  const cmds = installCommands({ baseUrl: baseUrl || '<engine-url>', code: code?.code ?? '<code>', pinCA });

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
        <FormControlLabel
          control={<Switch checked={pinCA} onChange={(e) => setPinCA(e.target.checked)} />}
          label="Pin the Engine’s local CA"
        />
      </Box>
      <Typography variant="body2" sx={{ mb: 1 }}>
        On the Linux device, with the <code>cairn-agent</code> binary of this Cairn release on its path:
      </Typography>
      {pinCA && (
        <>
          <Typography variant="body2" color="text.secondary" sx={{ mb: 0.75 }}>
            1. Fetch the Engine’s CA certificate (or{' '}
            <Link href={CA_PATH} download="ca.pem">
              download ca.pem
            </Link>{' '}
            here and copy it over). Compare its fingerprint with the one the Engine printed when it started.
          </Typography>
          <CommandBlock id="ca" lines={cmds.caDownload} label="CA download commands" />
        </>
      )}
      <Typography variant="body2" color="text.secondary" sx={{ mb: 0.75 }}>
        {pinCA ? '2. ' : ''}Enroll, then install and start the service. The device then waits for approval below
        {' '}(unless auto-approval is on).
      </Typography>
      <CommandBlock id="enroll" lines={cmds.enroll} label="Enroll commands" />
      {!pinCA && https && (
        <Typography variant="caption" color="text.secondary" component="p">
          Without a pinned CA the agent checks the Engine’s certificate against the system’s public CAs: turn this off
          only when the Engine uses a provided certificate.
        </Typography>
      )}
    </Box>
  );
}
