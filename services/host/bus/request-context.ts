// What the bus learned of a request before its handler runs (host-bus.ts): the session its routing
// read found, so a handler never reads the same row again to find it.
export interface RequestContext {
  sessionId?: string;
}
