// One async mutex per real workspace path, process-wide: file tools and Bash commands of every session
// on a workspace run one at a time, so a symlink a Bash command plants cannot race a file tool's path
// checks (docs/architecture.md "Tools"). The price: a long Bash command delays the others.
const tails = new Map<string, Promise<void>>();

export async function withWorkspaceLock<T>(workspace: string, fn: () => Promise<T>): Promise<T> {
  const previous = tails.get(workspace) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tail = previous.then(() => mine);
  tails.set(workspace, tail);
  await previous;
  try {
    return await fn();
  } finally {
    release();
    if (tails.get(workspace) === tail) tails.delete(workspace);
  }
}
