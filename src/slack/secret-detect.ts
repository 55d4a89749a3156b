// Recognises text that is (or contains) a credential, so it is never echoed, stored or left in a channel.

const KNOWN_PREFIXES = [
  /\bglpat-[A-Za-z0-9_-]{16,}/, // GitLab
  /\bgh[pousr]_[A-Za-z0-9]{20,}/, // GitHub
  /\bgithub_pat_[A-Za-z0-9_]{20,}/,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/, // Slack
  /\bxapp-[A-Za-z0-9-]{10,}/,
  /\bsk-[A-Za-z0-9_-]{20,}/, // OpenAI-style
  /\bAKIA[0-9A-Z]{16}\b/, // AWS access key id
  /\bATATT[A-Za-z0-9_=-]{20,}/, // Atlassian API token
  /\bsecret_[A-Za-z0-9]{30,}/, // Notion
  /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/, // JWT
];

const HEX_OR_UUID = /^[0-9a-f-]+$/i;

/** A long word mixing upper case, lower case and digits, in a token alphabet: how random API keys look. */
function randomLooking(w: string): boolean {
  return (
    w.length >= 32 &&
    /^[A-Za-z0-9_\-+=]+$/.test(w) && // no "/", "." or ":": paths, hosts and file:line references are not keys
    /[a-z]/.test(w) &&
    /[A-Z]/.test(w) &&
    /\d/.test(w) &&
    !HEX_OR_UUID.test(w) // commit hashes and UUIDs are identifiers, not secrets
  );
}

/** Whether `text` looks like it carries a secret: a known token format or a long random-looking word. */
export function looksLikeSecret(text: string): boolean {
  if (KNOWN_PREFIXES.some((re) => re.test(text))) return true;
  return text.split(/\s+/).some(randomLooking);
}
