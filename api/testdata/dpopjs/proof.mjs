// Test only (api/dpop_interop_test.go): signs DPoP proofs with panva's
// dpop package, as a third-party client would. Reads from stdin
// {"d", "x", "iat", "requests": [{"htm", "htu", "access_token"}]} (an
// Ed25519 key as base64url, the Engine's clock in Unix seconds) and
// writes a JSON array of proofs.
import { generateProof } from 'dpop';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const req = JSON.parse(input);
const jwk = { kty: 'OKP', crv: 'Ed25519', x: req.x };
const keypair = {
  privateKey: await crypto.subtle.importKey('jwk', { ...jwk, d: req.d }, { name: 'Ed25519' }, false, ['sign']),
  publicKey: await crypto.subtle.importKey('jwk', jwk, { name: 'Ed25519' }, true, ['verify']),
};
// The package dates proofs with Date.now; the Engine under test runs on
// its own clock.
Date.now = () => req.iat * 1000;
const proofs = [];
for (const r of req.requests) {
  proofs.push(await generateProof(keypair, r.htu, r.htm, undefined, r.access_token || undefined));
}
process.stdout.write(JSON.stringify(proofs));
