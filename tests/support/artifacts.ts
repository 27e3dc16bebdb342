// Reading a plan file through artifacts.read the way a client must: page after page until
// `nextOffset` is null, the bytes reassembled from base64 (docs/protocol.md, `artifacts.read`).
import type { TypedRpcClient } from "../../services/protocol/rpc-client.ts";
import type { ArtifactContent } from "../../services/protocol/schemas.ts";

/** Any client that can call the client methods (the tests' typed RPC client). */
type Caller = Pick<TypedRpcClient, "call">;

/** Every page of the plan file of `proposalId`, in order; a refusal of any page rejects. */
export async function artifactPages(
  client: Caller,
  proposalId: string,
  maxBytes?: number,
): Promise<ArtifactContent[]> {
  const pages: ArtifactContent[] = [];
  let offset = 0;
  for (;;) {
    const page = await client.call("artifacts.read", {
      proposalId,
      offset,
      ...(maxBytes === undefined ? {} : { maxBytes }),
    });
    pages.push(page);
    if (page.nextOffset === null) return pages;
    if (page.nextOffset <= offset) throw new Error(`artifacts.read did not advance past ${offset}`);
    offset = page.nextOffset;
  }
}

/** The whole plan file: the last page's fields with the reassembled `bytes` and their UTF-8 `content`. */
export async function readArtifact(client: Caller, proposalId: string, maxBytes?: number) {
  const pages = await artifactPages(client, proposalId, maxBytes);
  const bytes = Buffer.concat(pages.map((p) => Buffer.from(p.data, "base64")));
  const { data: _data, offset: _offset, nextOffset: _next, ...file } = pages[pages.length - 1]!;
  return { ...file, bytes, content: bytes.toString("utf8"), pages };
}
