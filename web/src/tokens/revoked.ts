/**
 * What a password or MFA reset did to the account's API tokens (it revokes
 * them all): " 2 API tokens were revoked." or nothing when there were none.
 */
export function tokensRevokedSentence(n: number): string {
  if (n <= 0) return '';
  return ` ${n} API token${n === 1 ? ' was' : 's were'} revoked.`;
}
