/**
 * Last-resort cleanup for servers the harness starts, so none outlive the
 * test process. Vitest ends its fork workers with SIGTERM, which skips
 * `process.on('exit')`, so termination signals are hooked too: the cleanup
 * runs, then the signal is raised again so the process still dies of it.
 */
const tasks = new Set<() => void>();
let installed = false;

function runAll(): void {
  for (const task of tasks) {
    try {
      task();
    } catch {
      // best effort while exiting
    }
  }
  tasks.clear();
}

/**
 * Registers a synchronous cleanup to run when the process exits or receives
 * SIGTERM, SIGINT or SIGHUP. Returns a function that unregisters it.
 */
export function onProcessEnd(task: () => void): () => void {
  if (!installed) {
    installed = true;
    process.on('exit', runAll);
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
      process.once(signal, () => {
        runAll();
        // Re-raise only when nobody else handles it, restoring the default (death by signal).
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      });
    }
  }
  tasks.add(task);
  return () => tasks.delete(task);
}
