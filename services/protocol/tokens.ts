// The one subject-token rule (principals, ids, plugin ids, tool names, the prefix). No imports, so
// the CLI can check its configuration without loading TypeBox.

/** Principals, ids, plugin ids and tool names become subject tokens: only these characters. */
export const SUBJECT_TOKEN_PATTERN = "^[A-Za-z0-9_-]{1,64}$";
export const SUBJECT_TOKEN = new RegExp(SUBJECT_TOKEN_PATTERN);
/** The subject prefix (`PI_PREFIX`): one token, at most 32 characters. */
export const PREFIX_TOKEN = /^[A-Za-z0-9_-]{1,32}$/;
