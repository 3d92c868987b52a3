/**
 * One process "beforeExit" listener for all open clients. Node emits
 * beforeExit when nothing is left to do; a client's flush timer is unref'd so
 * it never keeps a process alive on its own, and this hook sends the calls
 * that timer was waiting for. The requests keep the process alive until they
 * are answered, so a script that makes a call and never closes the client
 * still delivers it, then exits. (beforeExit is not emitted on
 * process.exit() or a signal: call close() there.)
 */

interface ExitAware {
  sendQueuedBeforeExit(): void;
}

const openClients = new Set<ExitAware>();

function onBeforeExit(): void {
  for (const client of openClients) client.sendQueuedBeforeExit();
}

export function registerBeforeExit(client: ExitAware): void {
  if (openClients.size === 0) process.on("beforeExit", onBeforeExit);
  openClients.add(client);
}

export function unregisterBeforeExit(client: ExitAware): void {
  if (!openClients.delete(client)) return;
  if (openClients.size === 0) process.off("beforeExit", onBeforeExit);
}
