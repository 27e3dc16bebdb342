// Wire schemas of `audit.list` (docs/protocol.md, "Audit"): the audit rows a person may read, newest
// first, paged by row id.
import { type Static, Type } from "typebox";
import { Id, Nullable, Timestamp } from "./values.ts";

/** Rows in one page at most; a page is also bounded in bytes (AUDIT_PAGE_MAX_BYTES). */
export const AUDIT_PAGE_MAX_ROWS = 200;
/** Bytes of the rows' JSON in one page at most (at least one row is always returned). */
export const AUDIT_PAGE_MAX_BYTES = 256 * 1024;

export const AuditListParams = Type.Object(
  {
    /** Only this session's rows. */
    sessionId: Type.Optional(Id),
    /** Only this project's rows (its own and its sessions'). */
    projectId: Type.Optional(Id),
    /** Rows with an id below this one (the previous page's `next`); absent: the newest. */
    before: Type.Optional(Type.Integer({ minimum: 1 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: AUDIT_PAGE_MAX_ROWS })),
  },
  { additionalProperties: false },
);

export const AuditEntryView = Type.Object({
  id: Type.Integer(),
  at: Timestamp,
  principal: Nullable(Type.String()),
  sessionId: Nullable(Type.String()),
  projectId: Nullable(Type.String()),
  turnId: Nullable(Type.String()),
  toolCallId: Nullable(Type.String()),
  action: Type.String(),
  decision: Nullable(Type.String()),
  code: Nullable(Type.String()),
  details: Type.Record(Type.String(), Type.Unknown()),
});

export const AuditPage = Type.Object({
  entries: Type.Array(AuditEntryView),
  /** Pass as `before` for the next (older) page; null when there is none. */
  next: Nullable(Type.Integer()),
});

export type AuditListParams = Static<typeof AuditListParams>;
export type AuditEntryView = Static<typeof AuditEntryView>;
export type AuditPage = Static<typeof AuditPage>;
